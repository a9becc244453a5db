//! The attempt trace as JSON Lines (DESIGN §5 `--trace`).

use crate::analysis::RunSet;
use std::io::Write;

/// One JSON object per traced attempt: variants in order, then
/// replications, then attempts in the order they were decided.
pub fn render_trace(set: &RunSet) -> anyhow::Result<Vec<u8>> {
    let mut out = Vec::new();
    write_trace(set, &mut out)?;
    Ok(out)
}

/// Writes the trace of [`render_trace`] into `out` as it is produced (a
/// trace may be hundreds of megabytes: it is never held whole).
pub fn write_trace(set: &RunSet, out: &mut dyn Write) -> anyhow::Result<()> {
    for v in &set.variants {
        let s = &v.scenario;
        for (rep, run) in v.runs.iter().enumerate() {
            for r in &run.trace {
                let row = r.to_json(s, rep);
                serde_json::to_writer(&mut *out, &row)?;
                out.write_all(b"\n")?;
            }
        }
    }
    Ok(())
}
