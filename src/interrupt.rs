//! Ctrl-C (SIGINT) and SIGTERM: stop cleanly, never leave a half-written
//! output.
//!
//! [`install`] makes the first signal only raise a flag. Simulations poll
//! it ([`requested`]) and stop early; the commands then return
//! [`Interrupted`] before writing anything, and an atomic write in progress
//! removes its temporary file instead of moving it into place. A second
//! signal ends the process at once, as the default would.

use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// Exit status of a process stopped by Ctrl-C (128 + SIGINT), as shells use.
pub const EXIT_INTERRUPTED: i32 = 130;

/// The error of work stopped by a signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("interrupted: stopped before finishing; files already in place are complete, the rest were not written")]
pub struct Interrupted;

fn flag() -> &'static Arc<AtomicBool> {
    static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();
    FLAG.get_or_init(|| Arc::new(AtomicBool::new(false)))
}

/// Routes SIGINT and SIGTERM to the interrupt flag (the second one ends the
/// process with status 130 or 143). Does nothing where signals do not exist.
pub fn install() {
    #[cfg(unix)]
    {
        use signal_hook::consts::{SIGINT, SIGTERM};
        use signal_hook::flag::{register, register_conditional_shutdown};
        for (signal, status) in [(SIGINT, EXIT_INTERRUPTED), (SIGTERM, 128 + SIGTERM)] {
            // The shutdown handler runs first and sees the flag of an earlier signal.
            let _ = register_conditional_shutdown(signal, status, Arc::clone(flag()));
            let _ = register(signal, Arc::clone(flag()));
        }
        // A closed stdout (`retrysim run … | head`) ends the process as it
        // ends other command-line tools (by SIGPIPE), not with a panic in
        // `print!`: Rust ignores SIGPIPE unless told otherwise.
        use signal_hook::consts::SIGPIPE;
        // SAFETY: the handler only calls `emulate_default_handler`, which is
        // async-signal-safe.
        let _ = unsafe {
            signal_hook::low_level::register(SIGPIPE, || {
                let _ = signal_hook::low_level::emulate_default_handler(SIGPIPE);
            })
        };
    }
}

/// Whether a stop has been requested.
#[inline]
pub fn requested() -> bool {
    flag().load(Ordering::Relaxed)
}

/// Requests a stop, as a first Ctrl-C does.
pub fn request() {
    flag().store(true, Ordering::SeqCst);
}

/// `Err(Interrupted)` once a stop has been requested.
pub fn check() -> Result<(), Interrupted> {
    if requested() { Err(Interrupted) } else { Ok(()) }
}
