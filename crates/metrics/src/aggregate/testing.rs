//! Record builders for tests of this crate and of the crates above it (feature `testing`).

use ringperf_wire::record::Phase;

use ringperf_wire::record::RecordFacts;

/// A valid streaming record: start at 1_000 ns, content at 11_000, 13_000, 16_000 ns.
pub fn facts() -> RecordFacts {
    RecordFacts {
        phase: Phase::Profiling,
        session_num: 0,
        x_request_id: uuid::Uuid::from_u128(1),
        x_correlation_id: uuid::Uuid::from_u128(2),
        conversation_id: "c0".into(),
        turn_index: 0,
        worker_id: 0,
        intended_ns: 900,
        start_ns: 1_000,
        head_ns: Some(5_000),
        end_ns: 20_000,
        credit_issued_wall_ns: 1_700_000_000_000_000_000,
        request_start_wall_ns: 1_700_000_000_000_000_100,
        request_ack_wall_ns: None,
        request_end_wall_ns: 1_700_000_000_000_019_100,
        content_stamps_ns: vec![11_000, 13_000, 16_000],
        first_output_stamp_ns: Some(13_000),
        input_tokens: Some(100),
        output_tokens: Some(5),
        reasoning_tokens: None,
        usage: None,
        requested_osl: None,
        scheduled_send_ms: None,
        error: None,
        was_cancelled: false,
        conn_reused: true,
        bytes_sent: 10,
        bytes_received: 20,
        trace: None,
        first_content_chunk_tokens: None,
        receive: Default::default(),
        audio_seconds: None,
        media: Default::default(),
        spec_decode: None,
        prefix_blocks: None,
        lineage: None,
        source: None,
    }
}
