//! `CycleState`: what PreFilter and PreScore write for Filter and Score to read, written by
//! plugins the framework does not know. As upstream, each piece of plugin state has a key; here
//! the key is typed: a plugin registers its state types when it is built (`StateSlots`) and keeps
//! the `StateKey<T>` handles, so the framework names no plugin and every read is a `&T`, with no
//! downcast at the plugin. Cloning a state (preemption, the nominated-pods pass) clones each
//! plugin's data, as upstream's `CycleState.Clone`.

use std::any::Any;
use std::fmt;
use std::marker::PhantomData;

/// Plugin state in a cycle: any `Clone` data that can cross threads.
pub trait StateData: Any + Send + Sync + fmt::Debug {
    fn clone_data(&self) -> Box<dyn StateData>;
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<T: Any + Clone + Send + Sync + fmt::Debug> StateData for T {
    fn clone_data(&self) -> Box<dyn StateData> {
        Box::new(self.clone())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// The key of one piece of plugin state of type `T`, handed out by `StateSlots::register`.
pub struct StateKey<T> {
    slot: usize,
    /// The upstream state key (`PreFilterNodePorts`), for errors.
    name: &'static str,
    data: PhantomData<fn() -> T>,
}

impl<T> Clone for StateKey<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for StateKey<T> {}

impl<T> fmt::Debug for StateKey<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StateKey({}, {})", self.slot, self.name)
    }
}

impl<T> StateKey<T> {
    /// The upstream name of the state (`PreFilterNodePorts`), as errors quote it.
    pub fn name(&self) -> &'static str {
        self.name
    }
}

/// Hands out the slots of one framework's cycle states as its plugins are built.
#[derive(Debug, Default)]
pub struct StateSlots {
    names: Vec<&'static str>,
}

impl StateSlots {
    /// A slot for state of type `T`, named as upstream names the key.
    pub fn register<T: StateData>(&mut self, name: &'static str) -> StateKey<T> {
        self.names.push(name);
        StateKey {
            slot: self.names.len() - 1,
            name,
            data: PhantomData,
        }
    }
}

#[derive(Default)]
pub struct CycleState {
    /// Plugin data by slot; `None` until its plugin writes it.
    slots: Vec<Option<Box<dyn StateData>>>,
    /// Plugins whose PreFilter returned Skip: their Filter is not run.
    pub skip_filter: Vec<&'static str>,
    /// Plugins whose PreScore returned Skip: their Score is not run.
    pub skip_score: Vec<&'static str>,
}

impl Clone for CycleState {
    fn clone(&self) -> Self {
        CycleState {
            slots: self
                .slots
                .iter()
                .map(|s| s.as_deref().map(StateData::clone_data))
                .collect(),
            skip_filter: self.skip_filter.clone(),
            skip_score: self.skip_score.clone(),
        }
    }
}

impl fmt::Debug for CycleState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CycleState")
            .field("slots", &self.slots)
            .field("skip_filter", &self.skip_filter)
            .field("skip_score", &self.skip_score)
            .finish()
    }
}

impl CycleState {
    /// `cycleState.Write`.
    pub fn write<T: StateData>(&mut self, key: StateKey<T>, data: T) {
        if self.slots.len() <= key.slot {
            self.slots.resize_with(key.slot + 1, || None);
        }
        self.slots[key.slot] = Some(Box::new(data));
    }

    /// `cycleState.Read`: `None` when the plugin never wrote it.
    pub fn read<T: StateData>(&self, key: StateKey<T>) -> Option<&T> {
        self.slots
            .get(key.slot)?
            .as_deref()
            .and_then(|d| d.as_any().downcast_ref())
    }

    pub fn read_mut<T: StateData>(&mut self, key: StateKey<T>) -> Option<&mut T> {
        self.slots
            .get_mut(key.slot)?
            .as_deref_mut()
            .and_then(|d| d.as_any_mut().downcast_mut())
    }

    pub fn skips_filter(&self, plugin: &str) -> bool {
        self.skip_filter.contains(&plugin)
    }

    pub fn skips_score(&self, plugin: &str) -> bool {
        self.skip_score.contains(&plugin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Debug, PartialEq)]
    struct Counts(Vec<i32>);

    #[test]
    fn plugins_read_what_they_wrote_and_a_clone_is_independent() {
        let mut slots = StateSlots::default();
        let counts: StateKey<Counts> = slots.register("PreFilterCounts");
        let flag: StateKey<bool> = slots.register("PreScoreFlag");
        let mut state = CycleState::default();
        assert_eq!(state.read(counts), None);
        state.write(counts, Counts(vec![1]));
        let copy = state.clone();
        state.read_mut(counts).unwrap().0.push(2);
        assert_eq!(state.read(counts), Some(&Counts(vec![1, 2])));
        assert_eq!(copy.read(counts), Some(&Counts(vec![1])));
        assert_eq!(state.read(flag), None);
        state.write(flag, true);
        assert_eq!(state.read(flag), Some(&true));
        assert_eq!(counts.name(), "PreFilterCounts");
    }
}
