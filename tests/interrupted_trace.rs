//! Ctrl-C while a large trace is written stops the writing within one
//! 64 kB buffer (so within milliseconds), and the trace is not moved into
//! place. In-process: the interrupt flag is global, so this binary has only
//! this test.

use std::io::Write;

const PEER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/peer/scenario.toml");

/// Passes bytes on, and raises the interrupt flag (as a first Ctrl-C does)
/// once `after` bytes went through.
struct Tripwire<'a> {
    inner: &'a mut dyn Write,
    written: usize,
    after: usize,
    after_flag: usize,
}

impl Write for Tripwire<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        if retrysim::interrupt::requested() {
            self.after_flag += n;
        }
        self.written += n;
        if self.written >= self.after {
            retrysim::interrupt::request();
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

#[test]
fn ctrl_c_stops_a_large_trace_within_one_buffer() {
    let exp = retrysim::config::load_experiment(std::path::Path::new(PEER), &[]).unwrap();
    let options = retrysim::model::RunOptions { trace_fraction: 1.0, lean: false };
    let set = retrysim::analysis::run_all_with(&exp.variants, Some(1), 1, options, &|| {}).unwrap();
    let whole = retrysim::output::trace::render_trace(&set).unwrap().len();
    assert!(whole > 5_000_000, "the trace is only {whole} bytes");

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.jsonl");
    let mut after_flag = 0;
    let e = retrysim::output::write_streamed(&path, &[], |w| {
        let mut t = Tripwire { inner: w, written: 0, after: 1_000_000, after_flag: 0 };
        let r = retrysim::output::trace::write_trace(&set, &mut t);
        after_flag = t.after_flag;
        r
    })
    .unwrap_err();
    assert!(e.downcast_ref::<retrysim::interrupt::Interrupted>().is_some(), "{e:#}");
    // At most one buffer (64 kB) and one row are produced after the flag.
    assert!(after_flag < 70_000, "{after_flag} bytes of a {whole}-byte trace were produced after Ctrl-C");
    assert!(!path.exists(), "an interrupted trace is not moved into place");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "no temporary file is left");
}
