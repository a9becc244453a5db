//! Skipping the destructors of large values when the process is about to
//! exit.
//!
//! Freeing what a command built last (the experiment, every run's metrics
//! and the summaries) is work the operating system does anyway when the
//! process ends. The binary calls [`exiting_process`] once; from then on
//! [`discard`] forgets its value instead of dropping it. In-process callers
//! (tests, the library) never call it, so there every value is dropped as
//! usual and nothing leaks.
//!
//! Only what is discarded at the very end gains: memory freed earlier is
//! what the allocator hands out next, so forgetting it (the command line's
//! definition was tried) costs fresh pages, which are dearer than the
//! frees saved (docs/performance.md, section 5).

use std::sync::atomic::{AtomicBool, Ordering};

static EXITING: AtomicBool = AtomicBool::new(false);

/// Declares that this process exits when the command returns, so values
/// passed to [`discard`] need not be freed. Called by the binary only.
pub fn exiting_process() {
    EXITING.store(true, Ordering::Relaxed);
}

/// Ends `value`'s life: dropped, or forgotten when the process is exiting
/// (its memory goes back with the process). Use it only for values that own
/// nothing but memory (no files, locks or buffered writers to flush).
pub fn discard<T>(value: T) {
    if EXITING.load(Ordering::Relaxed) {
        std::mem::forget(value);
    } else {
        drop(value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    #[test]
    fn an_in_process_caller_drops_the_value() {
        // Tests never declare the process exiting, so the value is dropped.
        let shared = Rc::new(());
        discard(Rc::clone(&shared));
        assert_eq!(Rc::strong_count(&shared), 1);
    }
}
