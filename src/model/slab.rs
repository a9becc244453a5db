//! A slab of entities addressed by generational ids, so that a stale event
//! for a freed slot is recognised instead of touching its new occupant.

/// An entity id: slot index and the slot's generation when it was issued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Id {
    idx: u32,
    generation: u32,
}

#[derive(Clone)]
struct Slot<T> {
    generation: u32,
    value: Option<T>,
}

/// Storage whose memory is bounded by the number of live entities.
#[derive(Clone)]
pub struct Slab<T> {
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
    live: usize,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Self { slots: Vec::new(), free: Vec::new(), live: 0 }
    }
}

impl<T> Slab<T> {
    /// Stores `value` and returns its id.
    pub fn insert(&mut self, value: T) -> Id {
        self.live += 1;
        if let Some(idx) = self.free.pop() {
            let slot = &mut self.slots[idx as usize];
            slot.value = Some(value);
            Id { idx, generation: slot.generation }
        } else {
            let idx = u32::try_from(self.slots.len()).expect("fewer than 2^32 live entities");
            self.slots.push(Slot { generation: 0, value: Some(value) });
            Id { idx, generation: 0 }
        }
    }

    /// The entity, if `id` is still live.
    #[inline]
    pub fn get(&self, id: Id) -> Option<&T> {
        let slot = self.slots.get(id.idx as usize)?;
        if slot.generation == id.generation { slot.value.as_ref() } else { None }
    }

    /// The entity, mutably, if `id` is still live.
    #[inline]
    pub fn get_mut(&mut self, id: Id) -> Option<&mut T> {
        let slot = self.slots.get_mut(id.idx as usize)?;
        if slot.generation == id.generation { slot.value.as_mut() } else { None }
    }

    /// Removes the entity; its id becomes stale.
    pub fn remove(&mut self, id: Id) -> Option<T> {
        let slot = self.slots.get_mut(id.idx as usize)?;
        if slot.generation != id.generation {
            return None;
        }
        let v = slot.value.take()?;
        slot.generation = slot.generation.wrapping_add(1);
        self.free.push(id.idx);
        self.live -= 1;
        Some(v)
    }

    /// Removes the entity in place and returns what `read` takes from it,
    /// without moving the whole entity out (its id becomes stale).
    #[inline]
    pub fn remove_with<R>(&mut self, id: Id, read: impl FnOnce(&T) -> R) -> Option<R> {
        let slot = self.slots.get_mut(id.idx as usize)?;
        if slot.generation != id.generation {
            return None;
        }
        let r = read(slot.value.as_ref()?);
        slot.value = None;
        slot.generation = slot.generation.wrapping_add(1);
        self.free.push(id.idx);
        self.live -= 1;
        Some(r)
    }

    /// Number of live entities.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether no entity is live.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Ids of all live entities, in slot order.
    pub fn ids(&self) -> Vec<Id> {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.value.is_some())
            .map(|(i, s)| Id { idx: i as u32, generation: s.generation })
            .collect()
    }

    /// Slots allocated (live or free): the memory high-water mark.
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_ids_are_rejected_and_slots_reused() {
        let mut s = Slab::default();
        let a = s.insert('a');
        assert_eq!(s.remove(a), Some('a'));
        let b = s.insert('b');
        assert_eq!(s.get(a), None);
        assert_eq!(s.get(b), Some(&'b'));
        assert_eq!(s.capacity(), 1);
        assert_eq!(s.len(), 1);
        assert_eq!(s.remove(a), None);
        assert_eq!(s.remove_with(b, |v| *v), Some('b'));
        assert_eq!(s.get(b), None);
        assert_eq!(s.remove_with(b, |v| *v), None);
        assert_eq!(s.len(), 0);
        let c = s.insert('c');
        assert_eq!((s.get(c), s.capacity()), (Some(&'c'), 1));
    }
}
