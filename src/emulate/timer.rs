//! Sleeps that end on time. Tokio's timer wheel has a resolution of one
//! millisecond and rounds every deadline up to its next tick, so a slept
//! 20 ms service time would last 20–21 ms and every host would run about
//! 3% slower than the experiment says. This timer is one thread that
//! waits on the earliest deadline with the kernel's own timeout (tens of
//! microseconds late) and wakes the tasks whose time has come.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::mpsc;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// The run's precise timer; the thread ends when the last handle goes.
#[derive(Clone)]
pub struct Timer {
    tx: mpsc::Sender<(Instant, oneshot::Sender<()>)>,
}

impl Timer {
    /// Starts the timer thread.
    pub fn start() -> Timer {
        let (tx, rx) = mpsc::channel::<(Instant, oneshot::Sender<()>)>();
        std::thread::Builder::new()
            .name("retrysim-timer".into())
            .spawn(move || run(rx))
            .expect("a thread for the timer");
        Timer { tx }
    }

    /// Sleeps until `at`.
    pub async fn sleep_until(&self, at: Instant) {
        if at <= Instant::now() {
            return;
        }
        let (wake, woken) = oneshot::channel();
        if self.tx.send((at, wake)).is_err() {
            // The timer has stopped: fall back to tokio's.
            tokio::time::sleep_until(at.into()).await;
            return;
        }
        let _ = woken.await;
    }

    /// Sleeps for `d`.
    pub async fn sleep(&self, d: Duration) {
        if !d.is_zero() {
            self.sleep_until(Instant::now() + d).await;
        }
    }
}

/// The timer thread: deadlines in order, each woken when it has come.
fn run(rx: mpsc::Receiver<(Instant, oneshot::Sender<()>)>) {
    let mut due: BinaryHeap<Reverse<(Instant, u64)>> = BinaryHeap::new();
    let mut waiting: std::collections::HashMap<u64, oneshot::Sender<()>> = std::collections::HashMap::new();
    let mut seq = 0u64;
    loop {
        let now = Instant::now();
        while let Some(&Reverse((at, id))) = due.peek() {
            if at > now {
                break;
            }
            due.pop();
            if let Some(wake) = waiting.remove(&id) {
                let _ = wake.send(());
            }
        }
        let next = match due.peek() {
            Some(&Reverse((at, _))) => rx.recv_timeout(at.saturating_duration_since(Instant::now())),
            None => rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
        };
        match next {
            Ok((at, wake)) => {
                due.push(Reverse((at, seq)));
                waiting.insert(seq, wake);
                seq += 1;
                // Take whatever else is queued without waiting.
                while let Ok((at, wake)) = rx.try_recv() {
                    due.push(Reverse((at, seq)));
                    waiting.insert(seq, wake);
                    seq += 1;
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadlines_are_woken_in_order_and_not_early() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let timer = Timer::start();
        rt.block_on(async {
            let start = Instant::now();
            let ((), b) = tokio::join!(timer.sleep(Duration::from_millis(30)), async {
                timer.sleep(Duration::from_millis(10)).await;
                start.elapsed()
            });
            assert!(b >= Duration::from_millis(10), "woken early: {b:?}");
            assert!(start.elapsed() >= Duration::from_millis(30));
        });
    }
}
