//! The swim lane's interactive viewer (AIPerf's `swim_lane.html`): one self-contained page,
//! its data the payload of [`super::swim_lane::SwimLane::payload`] in a JSON script element
//! (`id="swim-lane-data"`, AIPerf's keys), drawn on a canvas by the page's own script: the lanes
//! above, requests in flight and idle sessions below; hover a bar for its request, scroll to
//! zoom in time, drag to pan, double-click to reset.

use serde_json::Value;

use super::html::escape;

/// The page's script: reads the payload and draws it (no library, no network).
const SCRIPT: &str = r#"
const P = JSON.parse(document.getElementById('swim-lane-data').textContent);
const lanes = document.getElementById('lanes'), conc = document.getElementById('conc');
const tip = document.getElementById('tip');
const COLORS = ['#1f77b4','#aec7e8','#ff7f0e','#ffbb78','#2ca02c','#98df8a','#d62728','#ff9896',
  '#9467bd','#c5b0d5','#8c564b','#c49c94','#e377c2','#f7b6d2','#7f7f7f','#c7c7c7','#bcbd22',
  '#dbdb8d','#17becf','#9edae5'];
const slotRows = new Array(P.nSlots).fill(1);
for (const s of P.sessions) slotRows[s.slot] = Math.max(slotRows[s.slot], s.row0 + s.rows);
const slotOff = []; let rows = 0;
for (const r of slotRows) { slotOff.push(rows); rows += r; }
const ROW = Math.max(6, Math.min(18, 900 / Math.max(rows, 1))), LEFT = 50;
let t0 = 0, t1 = Math.max(P.tMax * 1.01, 0.001), bars = [];
function x(t, w) { return LEFT + (t - t0) / (t1 - t0) * (w - LEFT - 10); }
function drawLanes() {
  const w = lanes.width = lanes.clientWidth, h = lanes.height = rows * ROW + 20;
  const c = lanes.getContext('2d'); c.clearRect(0, 0, w, h); bars = [];
  c.fillStyle = '#333'; c.font = '11px sans-serif';
  for (let s = 0; s < P.nSlots; s += Math.max(1, Math.ceil(P.nSlots / 40)))
    c.fillText(String(s), 5, (slotOff[s] + 0.7) * ROW);
  for (const s of P.sessions) {
    const color = COLORS[s.ci % 20], base = slotOff[s.slot] + s.row0;
    c.globalAlpha = s.sub ? 0.15 : 0.25; c.fillStyle = color;
    for (const [a, b] of s.gaps) c.fillRect(x(a, w), base * ROW + 2, x(b, w) - x(a, w), s.rows * ROW - 4);
    c.globalAlpha = s.sub ? 0.55 : 1;
    s.turns.forEach((t, i) => {
      const y = (base + t[6]) * ROW + 2, bx = x(t[0], w), bw = Math.max(1, x(t[1], w) - bx);
      c.fillStyle = t[9] === 1 ? '#d00' : color; c.fillRect(bx, y, bw, ROW - 4);
      bars.push([bx, y, bw, ROW - 4, s, i]);
    });
    c.globalAlpha = 1;
  }
  c.strokeStyle = '#f90'; if (P.rampS != null) line(c, x(P.rampS, w), h);
  c.strokeStyle = '#d00'; if (P.benchEnd != null) line(c, x(P.benchEnd, w), h);
}
function line(c, px, h) { c.beginPath(); c.moveTo(px, 0); c.lineTo(px, h); c.stroke(); }
function step(c, curve, w, h, top, color, fill) {
  c.beginPath(); c.moveTo(x(0, w), h); let last = 0;
  curve.t.forEach((t, i) => { const px = x(t, w); c.lineTo(px, h - last / top * h); last = curve.v[i]; c.lineTo(px, h - last / top * h); });
  c.lineTo(w, h - last / top * h);
  if (fill) { c.lineTo(w, h); c.closePath(); c.globalAlpha = 0.3; c.fillStyle = color; c.fill(); c.globalAlpha = 1; }
  c.strokeStyle = color; c.stroke();
}
function drawConc() {
  const w = conc.width = conc.clientWidth, h = conc.height = 200;
  const c = conc.getContext('2d'); c.clearRect(0, 0, w, h);
  const top = Math.max(P.peakTotal, P.nSlots, P.target || 0, 1) * 1.15;
  step(c, P.active, w, h, top, '#2196F3', true); step(c, P.idle, w, h, top, '#999', false);
  c.strokeStyle = '#d00'; c.beginPath(); c.moveTo(LEFT, h - P.nSlots / top * h); c.lineTo(w, h - P.nSlots / top * h); c.stroke();
  if (P.target) { c.strokeStyle = '#090'; c.beginPath(); c.moveTo(LEFT, h - P.target / top * h); c.lineTo(w, h - P.target / top * h); c.stroke(); }
  c.fillStyle = '#333'; c.font = '11px sans-serif';
  c.fillText(t0.toFixed(3) + ' s', LEFT, h - 4); c.fillText(t1.toFixed(3) + ' s', w - 70, h - 4);
}
function draw() { drawLanes(); drawConc(); }
lanes.addEventListener('mousemove', e => {
  const r = lanes.getBoundingClientRect(), mx = e.clientX - r.left, my = e.clientY - r.top;
  const hit = bars.find(b => mx >= b[0] && mx <= b[0] + b[2] && my >= b[1] && my <= b[1] + b[3]);
  if (!hit) { tip.style.display = 'none'; return; }
  const [, , , , s, i] = hit, t = s.turns[i];
  tip.textContent = `${s.conv} (${s.id}) turn ${i}: ${t[0]}–${t[1]} s, TTFT ${t[2]} ms, latency ${t[3]} ms, ISL ${t[4]}, OSL ${t[5]}${t[9] === 1 ? ', error' : ''}`;
  tip.style.display = 'block'; tip.style.left = (e.pageX + 12) + 'px'; tip.style.top = (e.pageY + 12) + 'px';
});
lanes.addEventListener('wheel', e => {
  e.preventDefault(); const w = lanes.clientWidth, r = lanes.getBoundingClientRect();
  const at = t0 + (e.clientX - r.left - LEFT) / (w - LEFT - 10) * (t1 - t0), k = e.deltaY > 0 ? 1.25 : 0.8;
  t0 = Math.max(0, at - (at - t0) * k); t1 = at + (t1 - at) * k; draw();
}, {passive: false});
let drag = null;
lanes.addEventListener('mousedown', e => { drag = [e.clientX, t0, t1]; });
window.addEventListener('mouseup', () => { drag = null; });
window.addEventListener('mousemove', e => {
  if (!drag) return; const dt = (e.clientX - drag[0]) / (lanes.clientWidth - LEFT - 10) * (drag[2] - drag[1]);
  t0 = drag[1] - dt; t1 = drag[2] - dt; draw();
});
lanes.addEventListener('dblclick', () => { t0 = 0; t1 = Math.max(P.tMax * 1.01, 0.001); draw(); });
window.addEventListener('resize', draw);
draw();
"#;

/// The viewer page for `payload` (the run's name in the title).
pub fn page(payload: &Value) -> String {
    let run = payload
        .get("run")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let sessions = payload
        .get("sessions")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let num = |k: &str| payload.get(k).map(Value::to_string).unwrap_or_default();
    // `</` inside a JSON string would end the script element; `<\/` is the same JSON string.
    let json = serde_json::to_string(payload)
        .unwrap_or_else(|_| "{}".into())
        .replace("</", "<\\/");
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title} — swim lane</title>\
<style>body{{font-family:sans-serif;margin:1em;color:#222}}canvas{{width:100%;display:block;border:1px solid #eee}}\
#tip{{position:absolute;display:none;background:#fff;border:1px solid #999;padding:.3em .5em;font-size:12px;pointer-events:none}}\
.note{{color:#666;font-size:.85em}}</style></head><body>\
<h1>{title}</h1><p>{sessions} sessions across {slots} slots; peak requests in flight {active}, peak sessions alive {total}. \
<span class=\"note\">Hover a request for its figures; scroll to zoom in time, drag to pan, double-click to reset. \
Orange: ramp done; red: benchmark end.</span></p>\
<canvas id=\"lanes\"></canvas><canvas id=\"conc\"></canvas><div id=\"tip\"></div>\
<script type=\"application/json\" id=\"swim-lane-data\">{json}</script><script>{SCRIPT}</script></body></html>\n",
        title = escape(run),
        slots = num("nSlots"),
        active = num("peakActive"),
        total = num("peakTotal"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The payload reads back from the page exactly; a `</script>` in a session id cannot end
    /// the data element.
    #[test]
    fn the_payload_reads_back_from_the_page() {
        let payload =
            serde_json::json!({"run": "r<1>", "nSlots": 2, "sessions": [{"id": "</script>"}]});
        let html = page(&payload);
        let start = html.find("id=\"swim-lane-data\">").unwrap() + "id=\"swim-lane-data\">".len();
        let end = start + html[start..].find("</script>").unwrap();
        let back: Value = serde_json::from_str(&html[start..end]).unwrap();
        assert_eq!(back, payload);
        assert!(html.contains("<title>r&lt;1&gt; — swim lane</title>"));
    }
}
