//! AIPerf 0.13's media metrics (docs/metrics.md, "Media"): the images a request sent
//! (`num_images`, `image_throughput`, `image_latency`; `image_metrics.py`) and the figures a
//! video job reported (`video_inference_time`, `video_peak_memory`;
//! `video_generation_metrics.py`).

use super::registry::MetricId;
use ringperf_wire::record::MediaFacts;

/// AIPerf's time conversion factors (`value * (other.per_second / self.per_second)`).
const NS_TO_SEC: f64 = 1.0 / 1e9;
const NS_TO_MS: f64 = 1e3 / 1e9;

/// The media metrics of one valid record whose request latency is `latency_ns`, in their base
/// units (`num_images` a whole number):
///
/// - `num_images`: the image parts of the body, when there is at least one;
/// - `image_throughput`: images over the request latency in seconds (none at latency 0);
/// - `image_latency`: the request latency in ms over the images;
/// - `video_inference_time` (seconds) and `video_peak_memory` (MB): as the job reported them.
pub(super) fn values(media: &MediaFacts, latency_ns: Option<i64>) -> [(MetricId, Option<f64>); 5] {
    let images = (media.images > 0).then_some(media.images);
    let per_image = images.zip(latency_ns);
    [
        (MetricId::NumImages, images.map(f64::from)),
        (
            MetricId::ImageThroughput,
            per_image.and_then(|(n, ns)| {
                let sec = ns as f64 * NS_TO_SEC;
                (sec != 0.0).then(|| f64::from(n) / sec)
            }),
        ),
        (
            MetricId::ImageLatency,
            per_image.map(|(n, ns)| ns as f64 * NS_TO_MS / f64::from(n)),
        ),
        (MetricId::VideoInferenceTime, media.video_inference_time_s),
        (MetricId::VideoPeakMemory, media.video_peak_memory_mb),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(v: &[(MetricId, Option<f64>)], id: MetricId) -> Option<f64> {
        v.iter().find(|(m, _)| *m == id).and_then(|(_, x)| *x)
    }

    #[test]
    fn image_metrics_by_hand() {
        let media = MediaFacts {
            images: 4,
            ..MediaFacts::default()
        };
        let v = values(&media, Some(15_000));
        // Latency 15 µs: 4 images / 15e-6 s, and 0.015 ms / 4 images.
        assert_eq!(get(&v, MetricId::NumImages), Some(4.0));
        assert!((get(&v, MetricId::ImageThroughput).unwrap() - 4.0 / 15e-6).abs() < 1e-6);
        assert!((get(&v, MetricId::ImageLatency).unwrap() - 0.00375).abs() < 1e-15);
        assert_eq!(get(&v, MetricId::VideoInferenceTime), None);
    }

    #[test]
    fn no_images_no_image_metrics() {
        let mut media = MediaFacts::default();
        let v = values(&media, Some(15_000));
        for id in [
            MetricId::NumImages,
            MetricId::ImageThroughput,
            MetricId::ImageLatency,
        ] {
            assert_eq!(get(&v, id), None, "{}", id.def().tag);
        }
        // No latency (no content): the count alone.
        media.images = 2;
        let v = values(&media, None);
        assert_eq!(get(&v, MetricId::NumImages), Some(2.0));
        assert_eq!(get(&v, MetricId::ImageThroughput), None);
        assert_eq!(get(&v, MetricId::ImageLatency), None);
        // A latency of 0: a latency per image of 0, no throughput.
        let v = values(&media, Some(0));
        assert_eq!(get(&v, MetricId::ImageThroughput), None);
        assert_eq!(get(&v, MetricId::ImageLatency), Some(0.0));
    }

    #[test]
    fn video_figures_as_reported() {
        let media = MediaFacts {
            video_inference_time_s: Some(1.5),
            video_peak_memory_mb: Some(2048.0),
            ..MediaFacts::default()
        };
        let v = values(&media, Some(1));
        assert_eq!(get(&v, MetricId::VideoInferenceTime), Some(1.5));
        assert_eq!(MetricId::VideoInferenceTime.def().to_display(1.5), 1500.0);
        assert_eq!(get(&v, MetricId::VideoPeakMemory), Some(2048.0));
    }
}
