//! What parsing API objects into the model needs besides the objects: the interner of the load
//! its strings go to, and whether nodes and pods keep their API object (extenders are sent them).

use super::intern::Interner;

#[derive(Clone, Copy, Debug)]
pub struct Parse<'a> {
    pub strings: &'a Interner,
    /// With `--call-extenders`: kube-scheduler sends an extender the whole Pod, and whole Node
    /// objects to one that is not `nodeCacheCapable`; other runs drop them once parsed.
    pub keep_api_objects: bool,
}

impl<'a> Parse<'a> {
    /// Into `strings`, without API objects.
    pub fn new(strings: &'a Interner) -> Parse<'a> {
        Parse {
            strings,
            keep_api_objects: false,
        }
    }
}

/// How a load parses what it reads.
#[derive(Clone, Copy, Debug, Default)]
pub struct LoadOptions {
    /// Nodes and pods keep their API object (`Parse::keep_api_objects`).
    pub keep_api_objects: bool,
}
