//! The budgets, breakers and throttles of one client class's instances.
//!
//! A class whose policy gives every instance its own budget or breaker
//! (scope `client`) keeps the budget's kind and the breaker's
//! specification once, in one [`Budget`] and one [`Breaker`], and per
//! instance only what changes: a [`BudgetState`] and a [`BreakerMemory`]
//! (an [`Own`], 80 bytes, plus the instance's 4-byte slot). The class's
//! budget and breaker serve one instance at a time, the *bound* one: asking
//! for another instance's parks the bound instance's state in its `Own`
//! and takes up the other's. The state of an instance is made on its first
//! use (the constructors depend on the specification alone, so a state made
//! late is the state an idle instance would have kept): an instance that
//! never sends costs the 4 bytes of its slot.

use crate::config::ClientSpec;
use crate::policy::breaker::{Breaker, BreakerMemory};
use crate::policy::budget::{Budget, BudgetScope, BudgetState};
use crate::policy::throttle::Throttle;

/// What one client instance keeps for itself while another is bound.
#[derive(Clone)]
pub(super) struct Own {
    budget: Option<BudgetState>,
    breaker: Option<BreakerMemory>,
}

/// The bytes one instance of `spec`'s class keeps in [`Instances`] once it
/// has sent (its slot, its budget state and breaker memory, its own
/// throttle); 0 when instances keep no state of their own. A `slow_call`
/// breaker's window, on the heap, is not counted.
pub(super) fn bytes_per_instance(spec: &ClientSpec) -> usize {
    let p = &spec.policy;
    let budget = p.budget.is_some_and(|b| b.scope == BudgetScope::Client);
    let throttle = p.throttle.is_some_and(|t| t.scope == BudgetScope::Client);
    let own = if budget || p.breaker.is_some() { size_of::<Own>() } else { 0 };
    let throttle = if throttle { size_of::<Throttle>() } else { 0 };
    if own + throttle == 0 { 0 } else { size_of::<u32>() + own + throttle }
}

/// An instance whose own state was never needed.
const NO_SLOT: u32 = 0;

/// No instance is bound.
const UNBOUND: u32 = u32::MAX;

/// The per-instance (or shared) budget, breaker and throttle of a class.
#[derive(Clone)]
pub(super) struct Instances {
    /// The budget all instances share, or the one serving the bound instance.
    budget: Option<Budget>,
    budget_shared: bool,
    /// The breaker serving the bound instance.
    breaker: Option<Breaker>,
    /// The throttle all instances share, or what an instance's own starts as.
    throttle: Option<Throttle>,
    throttle_shared: bool,
    /// What a fresh instance starts with.
    fresh: Own,
    /// The instances' own budget states and breaker memories, by slot (the
    /// bound instance's are in `budget` and `breaker`, its `Own` holds
    /// none); empty when instances keep neither.
    own: Vec<Own>,
    /// The instances' own throttles, by slot; empty unless per instance.
    throttles: Vec<Throttle>,
    /// Index plus one of each instance's state in `own` and `throttles`
    /// ([`NO_SLOT`] before its first use); empty when instances keep no
    /// state of their own. Zero means none so that the vector comes zeroed
    /// from the allocator: a million idle instances are not even written once.
    slot: Vec<u32>,
    /// The instance whose state the budget and breaker hold ([`UNBOUND`]: none).
    bound: u32,
}

impl Instances {
    /// The guards of a class of `spec.count` instances with `spec.policy`.
    pub(super) fn new(spec: &ClientSpec) -> Self {
        let mut x = Self {
            budget: None,
            budget_shared: false,
            breaker: None,
            throttle: None,
            throttle_shared: false,
            fresh: Own { budget: None, breaker: None },
            own: Vec::new(),
            throttles: Vec::new(),
            slot: Vec::new(),
            bound: UNBOUND,
        };
        if let Some(t) = &spec.policy.throttle {
            x.throttle = Some(Throttle::new(t));
            x.throttle_shared = t.scope == BudgetScope::Shared;
        }
        if x.keeps_own() {
            x.slot = vec![NO_SLOT; spec.count as usize];
        }
        x.add_missing(spec);
        x
    }

    /// Adds the budget and breaker of `spec` that the class does not have
    /// yet (a world rebound to a changed scenario); instances that have a
    /// state already start the new ones fresh.
    pub(super) fn add_missing(&mut self, spec: &ClientSpec) {
        let had_own = self.keeps_own();
        if self.budget.is_none()
            && let Some(b) = spec.policy.budget
        {
            self.budget = Some(Budget::new(b.kind));
            self.budget_shared = b.scope == BudgetScope::Shared;
            if !self.budget_shared {
                self.fresh.budget = Some(BudgetState::new(b.kind));
                for own in &mut self.own {
                    own.budget = Some(BudgetState::new(b.kind));
                }
            }
        }
        if self.breaker.is_none()
            && let Some(b) = spec.policy.breaker
        {
            self.breaker = Some(Breaker::new(b));
            self.fresh.breaker = Some(BreakerMemory::new(&b));
            for own in &mut self.own {
                own.breaker = Some(BreakerMemory::new(&b));
            }
        }
        if self.keeps_own() && !had_own {
            self.slot = vec![NO_SLOT; spec.count as usize];
        }
    }

    /// Whether instances keep state of their own.
    fn keeps_own(&self) -> bool {
        self.fresh.budget.is_some()
            || self.fresh.breaker.is_some()
            || (self.throttle.is_some() && !self.throttle_shared)
    }

    /// The index of `instance`'s state, made on its first use (None when
    /// instances keep none).
    #[inline]
    fn index(&mut self, instance: u32) -> Option<usize> {
        let slot = self.slot.get_mut(instance as usize)?;
        if *slot == NO_SLOT {
            if self.fresh.budget.is_some() || self.fresh.breaker.is_some() {
                self.own.push(self.fresh.clone());
            }
            if let Some(t) = self.throttle.as_ref().filter(|_| !self.throttle_shared) {
                self.throttles.push(t.clone());
            }
            *slot = self.own.len().max(self.throttles.len()) as u32;
        }
        Some(*slot as usize - 1)
    }

    /// Makes the budget and breaker serve `instance` (false when instances
    /// keep no state of their own).
    #[inline]
    fn bind(&mut self, instance: u32) -> bool {
        if self.bound == instance {
            return true;
        }
        let Some(i) = self.index(instance) else {
            return false;
        };
        let own = &mut self.own[i];
        let (state, memory) = (own.budget.take(), own.breaker.take());
        let (state, memory) = (
            state.zip(self.budget.as_mut()).map(|(s, b)| b.replace_state(s)),
            memory.zip(self.breaker.as_mut()).map(|(m, b)| b.replace_memory(m)),
        );
        if self.bound != UNBOUND {
            let parked = &mut self.own[self.slot[self.bound as usize] as usize - 1];
            (parked.budget, parked.breaker) = (state, memory);
        }
        self.bound = instance;
        true
    }

    /// The budget of `instance` (or the shared one).
    #[inline]
    pub(super) fn budget(&mut self, instance: u32) -> Option<&mut Budget> {
        self.budget.as_ref()?;
        if !self.budget_shared && !self.bind(instance) {
            return None;
        }
        self.budget.as_mut()
    }

    /// The breaker of `instance`.
    #[inline]
    pub(super) fn breaker(&mut self, instance: u32) -> Option<&mut Breaker> {
        self.breaker.as_ref()?;
        if !self.bind(instance) {
            return None;
        }
        self.breaker.as_mut()
    }

    /// The throttle of `instance` (or the shared one).
    #[inline]
    pub(super) fn throttle(&mut self, instance: u32) -> Option<&mut Throttle> {
        self.throttle.as_ref()?;
        if self.throttle_shared {
            return self.throttle.as_mut();
        }
        let i = self.index(instance)?;
        self.throttles.get_mut(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_instance_with_its_own_budget_and_breaker_keeps_at_most_100_bytes() {
        // Its slot and its `Own`: a token bucket's level and a breaker's
        // state, window and count of openings.
        let bytes = size_of::<u32>() + size_of::<Own>();
        assert!(bytes <= 100, "{bytes} bytes per instance");
        assert_eq!(size_of::<BudgetState>(), 16);
        assert_eq!(size_of::<BreakerMemory>(), 64);
    }

    #[test]
    fn the_bytes_per_instance_are_the_records_an_instance_that_sends_keeps() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/clients/scenario.toml");
        let exp = crate::config::load_experiment(&path, &[]).unwrap();
        // Its own budget and breaker: the slot and the `Own` pushed on first use.
        let mut spec = exp.variants[0].clients[0].clone();
        let mut x = Instances::new(&spec);
        assert!(x.budget(7).is_some() && x.breaker(7).is_some());
        assert_eq!((x.slot.len(), x.own.len()), (spec.count as usize, 1));
        assert_eq!(bytes_per_instance(&spec), size_of_val(&x.slot[7]) + size_of_val(&x.own[0]));
        assert_eq!(bytes_per_instance(&spec), 84);
        // A shared budget and no breaker: nothing per instance.
        spec.policy.breaker = None;
        spec.policy.budget.as_mut().unwrap().scope = BudgetScope::Shared;
        assert_eq!(bytes_per_instance(&spec), 0);
        assert!(!Instances::new(&spec).keeps_own());
    }
}
