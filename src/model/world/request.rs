//! One attempt of a call, from send until it leaves the system, and its
//! lifecycle at the service: the phases it goes through and the legal moves
//! between them, in one place.
//!
//! ```text
//!             ┌──────────── cancel ───────────► Cancelled ── reach ──► (leaves)
//! Travelling ─┼─ reach, no worker ─► Queued ─┐
//!     │       └─ reach, a worker ──────────► Holding ── ledger admits ─► Working ── commit ─► Committed
//!     │                                      │  (waits in the ledger)      │                    │
//!     │ partition                            ▼                             ▼                    ▼
//!     ▼                         answered at once, or shed, or reset by a crash, or finished ──► Answered ── reply ──► (leaves)
//!   Lost ◄───────────────────────── its answer is lost (response_loss) ◄────────┘
//!     └── its caller times out or cancels ──► (leaves)
//! ```
//!
//! A request leaves from any phase when its caller cancels it while it is
//! queued or holds a worker, or when a queue drops it expired. Apart from
//! its phase, a request knows whether its caller still waits for it
//! ([`Interest`]) and what it is counted in: its host's concurrency limit
//! ([`LimitSlot`]) and its host's active requests for the balancer.

use super::*;

/// Where an attempt is on its service's side.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Phase {
    /// On its way to its host.
    Travelling,
    /// Its caller cancelled it on the way: dropped when it arrives.
    Cancelled,
    /// In its host's queue.
    Queued,
    /// Holds a worker; its own work has not started (it is at the ledger,
    /// or waits there for the original to finish).
    Holding,
    /// Holds a worker and does its own work or its plan (downstream calls).
    Working,
    /// Working, after its business write.
    Committed,
    /// Its host crashed while it was there: it is answered with a reset and
    /// what is left of its work is ignored.
    Reset,
    /// Answered: the answer travels back to its caller.
    Answered,
    /// Nothing of it is on the way or at its service (a partition cut it,
    /// or its answer was lost): it leaves when its caller stops waiting.
    Lost,
}

impl Phase {
    /// Whether `self → next` is a legal move.
    const fn allows(self, next: Phase) -> bool {
        use Phase::*;
        matches!(
            (self, next),
            (Travelling, Cancelled | Queued | Holding | Answered | Lost)
                | (Queued, Holding | Answered | Reset)
                | (Holding, Working | Answered | Reset)
                | (Working, Committed | Answered | Lost | Reset)
                | (Committed, Answered | Lost | Reset)
                | (Reset, Answered)
        )
    }

    /// It holds a worker at its service.
    pub(super) const fn holds_worker(self) -> bool {
        matches!(self, Phase::Holding | Phase::Working | Phase::Committed)
    }

    /// Its own work has started (and its answer may be lost or reset by
    /// faults): a worker did something for it.
    pub(super) const fn executed(self) -> bool {
        matches!(self, Phase::Working | Phase::Committed)
    }
}

/// Whether an attempt's caller still waits for its answer.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Interest {
    /// Its caller waits for its answer.
    Awaited,
    /// Its caller timed out, gave it up or cancelled it: work done for it
    /// from now on is wasted.
    Abandoned,
}

/// Its place under its host's concurrency limit: when it reached the host,
/// and the requests admitted there then (itself included).
#[derive(Clone, Copy, Debug)]
pub(super) struct LimitSlot {
    pub(super) reached_at: Nanos,
    pub(super) inflight_at: u32,
}

/// One attempt of a call, from send until it leaves the system.
#[derive(Clone)]
pub(super) struct Request {
    pub(super) call: Id,
    pub(super) intent: Id,
    pub(super) edge: u32,
    pub(super) service: u32,
    /// The host it was sent to (an index into the world's hosts).
    pub(super) host: u32,
    pub(super) operation: u32,
    pub(super) idem_key: Option<u64>,
    pub(super) fingerprint: u64,
    /// The ledger record (scope key) whose placeholder this request holds.
    pub(super) ledger_key: Option<u64>,
    /// Random key of this attempt.
    pub(super) rkey: u64,
    /// When its caller gives up on it.
    pub(super) expires_at: Nanos,
    /// Where it is at its service; moved only by [`Request::to`].
    phase: Phase,
    pub(super) interest: Interest,
    /// Its place under its host's concurrency limit, while it has one.
    pub(super) limit: Option<LimitSlot>,
    /// Counted in its host's active requests (least_request, peak_ewma)
    /// until its caller stops waiting for it.
    pub(super) active: bool,
    pub(super) demand: Nanos,
    /// When its own work ends ([`NEVER`] outside its own work): a `Done`
    /// event for another time is stale (a slowdown moved it).
    pub(super) done_at: Nanos,
    /// Progress through the service's plan (downstream calls, commit).
    pub(super) stage: u16,
    /// OCC: the row and the version read when work started.
    pub(super) row: u32,
    pub(super) version: u64,
    pub(super) answer: Outcome,
    pub(super) retry_after: Option<Nanos>,
    /// What it asks of its service: the operation, its status or its undoing.
    pub(super) ask: Ask,
}

/// What an attempt asks of its service.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Ask {
    /// The operation: its service's plan.
    Operation,
    /// A status query (`on_unknown = "query"`): whether its call committed,
    /// and nothing else.
    Status,
    /// A compensation (a reconciler's `compensate`): undo what the intent
    /// committed here, and nothing else.
    Undo,
}

/// Where a new attempt goes and what it carries.
pub(super) struct Sent {
    pub(super) call: Id,
    pub(super) intent: Id,
    pub(super) edge: u32,
    pub(super) service: u32,
    pub(super) host: u32,
    pub(super) operation: u32,
    pub(super) idem_key: Option<u64>,
    pub(super) fingerprint: u64,
    pub(super) rkey: u64,
    pub(super) expires_at: Nanos,
    pub(super) ask: Ask,
}

impl Request {
    /// A new attempt on its way to its host.
    pub(super) fn travelling(s: Sent) -> Request {
        Request {
            call: s.call,
            intent: s.intent,
            edge: s.edge,
            service: s.service,
            host: s.host,
            operation: s.operation,
            idem_key: s.idem_key,
            fingerprint: s.fingerprint,
            ledger_key: None,
            rkey: s.rkey,
            expires_at: s.expires_at,
            phase: Phase::Travelling,
            interest: Interest::Awaited,
            limit: None,
            active: false,
            demand: 0,
            done_at: NEVER,
            stage: 0,
            row: 0,
            version: 0,
            answer: Outcome::Ok,
            retry_after: None,
            ask: s.ask,
        }
    }

    /// Where it is at its service.
    #[inline]
    pub(super) fn phase(&self) -> Phase {
        self.phase
    }

    /// Moves it to `next`; the move must be legal ([`Phase::allows`]).
    #[inline]
    pub(super) fn to(&mut self, next: Phase) {
        debug_assert!(self.phase.allows(next), "request moved from {:?} to {next:?}", self.phase);
        self.phase = next;
    }

    /// Its caller no longer waits for it.
    #[inline]
    pub(super) fn abandon(&mut self) {
        self.interest = Interest::Abandoned;
    }

    /// Its caller no longer waits for it.
    #[inline]
    pub(super) fn abandoned(&self) -> bool {
        self.interest == Interest::Abandoned
    }

    /// It holds a worker and does its own work now (not its plan).
    #[inline]
    pub(super) fn in_own_work(&self) -> bool {
        self.phase.executed() && self.done_at != NEVER
    }
}

#[cfg(test)]
mod tests {
    use super::Phase::*;
    use super::*;

    const ALL: [Phase; 9] = [Travelling, Cancelled, Queued, Holding, Working, Committed, Reset, Answered, Lost];

    #[test]
    fn nothing_comes_back_from_an_answer_or_a_loss() {
        for next in ALL {
            assert!(!Answered.allows(next) && !Lost.allows(next) && !Cancelled.allows(next), "{next:?}");
        }
    }

    #[test]
    fn only_work_that_started_can_lose_its_answer_or_commit() {
        let into = |p: Phase| ALL.iter().filter(|&&from| from.allows(p)).copied().collect::<Vec<_>>();
        assert_eq!(into(Lost), [Travelling, Working, Committed]);
        assert_eq!(into(Committed), [Working]);
        assert_eq!(into(Working), [Holding]);
        assert!(ALL.iter().all(|&p| !p.allows(p)), "no phase moves to itself");
    }
}
