//! Interned strings: label keys and values, names and namespaces are stored once and compared by
//! pointer, so selector matching over 150,000 pods is integer work, not string work.

use rustc_hash::FxHashSet;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::{Mutex, OnceLock};

/// A string that lives for the rest of the process and exists once; equality is pointer equality.
#[derive(Clone, Copy)]
pub struct Str(&'static str);

/// Label keys and values repeat across thousands of objects; FxHash is several times faster than
/// SipHash on such short strings, and nothing here is attacker-chosen at a scale that matters.
fn table() -> &'static Mutex<FxHashSet<&'static str>> {
    static TABLE: OnceLock<Mutex<FxHashSet<&'static str>>> = OnceLock::new();
    TABLE.get_or_init(|| {
        Mutex::new(FxHashSet::with_capacity_and_hasher(
            1 << 16,
            Default::default(),
        ))
    })
}

impl Str {
    /// Interns `s`. The table only grows: a what-if run is short-lived and the distinct strings of a
    /// cluster are few compared with the objects that repeat them.
    pub fn new(s: impl AsRef<str>) -> Str {
        let s = s.as_ref();
        let mut table = table().lock().unwrap_or_else(|e| e.into_inner());
        if let Some(existing) = table.get(s) {
            return Str(existing);
        }
        let leaked: &'static str = Box::leak(s.to_owned().into_boxed_str());
        table.insert(leaked);
        Str(leaked)
    }

    /// Looks `s` up without interning it: a string nobody interned cannot equal any label.
    pub fn existing(s: &str) -> Option<Str> {
        let table = table().lock().unwrap_or_else(|e| e.into_inner());
        table.get(s).map(|&t| Str(t))
    }

    pub fn empty() -> Str {
        static EMPTY: OnceLock<Str> = OnceLock::new();
        *EMPTY.get_or_init(|| Str::new(""))
    }

    pub fn as_str(self) -> &'static str {
        self.0
    }
}

impl Default for Str {
    fn default() -> Self {
        Str::empty()
    }
}

impl PartialEq for Str {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.0.as_ptr(), other.0.as_ptr()) && self.0.len() == other.0.len()
    }
}
impl Eq for Str {}

impl PartialEq<&str> for Str {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl Hash for Str {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (self.0.as_ptr() as usize).hash(state);
    }
}

/// Ordered by content, so sorted output is stable across runs.
impl Ord for Str {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        if self == other {
            std::cmp::Ordering::Equal
        } else {
            self.0.cmp(other.0)
        }
    }
}
impl PartialOrd for Str {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Deref for Str {
    type Target = str;
    fn deref(&self) -> &str {
        self.0
    }
}

impl AsRef<str> for Str {
    fn as_ref(&self) -> &str {
        self.0
    }
}

impl fmt::Display for Str {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl fmt::Debug for Str {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.0, f)
    }
}

impl From<&str> for Str {
    fn from(s: &str) -> Self {
        Str::new(s)
    }
}

impl From<&String> for Str {
    fn from(s: &String) -> Self {
        Str::new(s)
    }
}

impl serde::Serialize for Str {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_content_is_one_pointer() {
        let a = Str::new("app");
        let b = Str::new(String::from("app"));
        assert_eq!(a, b);
        assert_ne!(a, Str::new("apps"));
        assert_eq!(Str::existing("app"), Some(a));
        assert_eq!(Str::existing("never-interned-string-xyz"), None);
    }

    #[test]
    fn orders_by_content() {
        let mut v = [Str::new("b"), Str::new("a"), Str::new("c")];
        v.sort();
        assert_eq!(
            v.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
            ["a", "b", "c"]
        );
    }
}
