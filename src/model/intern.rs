//! Interned strings. Label keys and values, names and namespaces repeat across thousands of
//! objects: a load stores each distinct string once, through the `Interner` it owns, and a `Str`
//! is one pointer to that copy, which carries the string's hash beside its text. Equality is then
//! a pointer comparison for strings of one interner, hashing reads one integer, and selector
//! matching over 150,000 pods stays integer work. Strings of the same text made apart (a pod read
//! after the cluster, a constant, a replica's name) are still equal: equal pointers, or equal
//! hashes and then equal text. No table is shared by the process: interners are values, and
//! strings live for the rest of the process (a run is short-lived).

use hashbrown::HashTable;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::Mutex;

/// A string and its hash, stored once.
pub struct Entry {
    hash: u64,
    text: &'static str,
}

impl Entry {
    /// A constant: `static ZONE: Entry = Entry::constant("topology.kubernetes.io/zone");`.
    pub const fn constant(text: &'static str) -> Entry {
        Entry {
            hash: hash(text.as_bytes()),
            text,
        }
    }
}

/// FxHash's word-at-a-time multiply-rotate, finished with a mix so that every bit of the result
/// depends on every byte (hash tables read its low bits and its high bits). `const`, so that
/// constants carry the hash interned strings of the same text get.
const fn hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;
    let mut h: u64 = bytes.len() as u64;
    let mut i = 0;
    while i + 8 <= bytes.len() {
        let b = bytes;
        let word = u64::from_le_bytes([
            b[i],
            b[i + 1],
            b[i + 2],
            b[i + 3],
            b[i + 4],
            b[i + 5],
            b[i + 6],
            b[i + 7],
        ]);
        h = (h.rotate_left(5) ^ word).wrapping_mul(K);
        i += 8;
    }
    if i < bytes.len() {
        let mut word: u64 = 0;
        while i < bytes.len() {
            word = (word << 8) | bytes[i] as u64;
            i += 1;
        }
        h = (h.rotate_left(5) ^ word).wrapping_mul(K);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h
}

/// A string stored once; `Copy`, compared and hashed as an integer.
#[derive(Clone, Copy)]
pub struct Str(&'static Entry);

static EMPTY: Entry = Entry::constant("");

fn leak(text: &str, hash: u64) -> Str {
    let text: &'static str = Box::leak(text.to_owned().into_boxed_str());
    Str(Box::leak(Box::new(Entry { hash, text })))
}

impl Str {
    /// A string made once, not shared with others of the same text (a replica's name, a test's
    /// value): many of them should go through an `Interner` instead.
    pub fn new(s: impl AsRef<str>) -> Str {
        let s = s.as_ref();
        if s.is_empty() {
            return Str::empty();
        }
        leak(s, hash(s.as_bytes()))
    }

    /// A constant (`Entry::constant`).
    pub const fn from_static(entry: &'static Entry) -> Str {
        Str(entry)
    }

    pub fn empty() -> Str {
        Str(&EMPTY)
    }

    pub fn as_str(self) -> &'static str {
        self.0.text
    }
}

/// The strings of one load, each stored once. Loads convert objects on several threads: the
/// table is split in shards by hash, each behind its own lock, so they rarely wait for each
/// other. A few strings (a namespace, `app`, `cpu`) are asked for by every object, so both
/// threads would take the same shard's lock in turn, its cache line moving between their
/// cores on every call: each worker thread first looks in a small table of its own, found by
/// its thread index, whose lock no other thread takes.
pub struct Interner {
    shards: Box<[Mutex<HashTable<Str>>]>,
    recent: Box<[Recent]>,
}

const SHARD_BITS: u32 = 6;

/// The strings one thread interned last, by the low bits of their hash; a newer string takes
/// the place of an older one. Aligned to a cache line of its own, so threads never share one.
#[repr(align(128))]
struct Recent(Mutex<Box<[Option<Str>]>>);

const RECENT_BITS: u32 = 12;

impl Recent {
    fn new() -> Recent {
        Recent(Mutex::new(vec![None; 1 << RECENT_BITS].into_boxed_slice()))
    }
}

impl Default for Interner {
    fn default() -> Self {
        Interner::new()
    }
}

impl Interner {
    pub fn new() -> Interner {
        Interner {
            shards: (0..1 << SHARD_BITS)
                .map(|_| Mutex::new(HashTable::with_capacity(1 << 10)))
                .collect(),
            recent: (0..rayon::current_num_threads())
                .map(|_| Recent::new())
                .collect(),
        }
    }

    fn shard(&self, hash: u64) -> std::sync::MutexGuard<'_, HashTable<Str>> {
        // Bits the shard's own table reads neither for its buckets (low) nor for its control
        // bytes (high).
        let i = (hash >> 40) as usize & ((1 << SHARD_BITS) - 1);
        self.shards[i].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `s`, stored once in this interner.
    pub fn intern(&self, s: impl AsRef<str>) -> Str {
        let s = s.as_ref();
        let h = hash(s.as_bytes());
        // A thread outside the pool (the main thread, a live read's) goes to the shards; so does
        // one whose table is taken, which only a thread of another pool could do.
        let recent = rayon::current_thread_index()
            .and_then(|i| self.recent.get(i))
            .and_then(|r| r.0.try_lock().ok());
        let Some(mut recent) = recent else {
            return self.shared(s, h);
        };
        let slot = &mut recent[h as usize & ((1 << RECENT_BITS) - 1)];
        match *slot {
            Some(found) if found.0.hash == h && found.0.text == s => found,
            _ => *slot.insert(self.shared(s, h)),
        }
    }

    fn shared(&self, s: &str, h: u64) -> Str {
        let mut shard = self.shard(h);
        if let Some(&found) = shard.find(h, |e| e.0.text == s) {
            return found;
        }
        let new = if s.is_empty() {
            Str::empty()
        } else {
            leak(s, h)
        };
        shard.insert_unique(h, new, |e| e.0.hash);
        new
    }

    /// `s` if this interner holds it: a string no object of the load has is equal to none of
    /// their strings.
    pub fn get(&self, s: impl AsRef<str>) -> Option<Str> {
        let s = s.as_ref();
        let h = hash(s.as_bytes());
        self.shard(h).find(h, |e| e.0.text == s).copied()
    }
}

impl fmt::Debug for Interner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let len: usize = self
            .shards
            .iter()
            .map(|s| s.lock().unwrap_or_else(|e| e.into_inner()).len())
            .sum();
        write!(f, "Interner({len} strings)")
    }
}

impl Default for Str {
    fn default() -> Self {
        Str::empty()
    }
}

impl PartialEq for Str {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.0, other.0)
            || (self.0.hash == other.0.hash && self.0.text == other.0.text)
    }
}
impl Eq for Str {}

impl PartialEq<&str> for Str {
    fn eq(&self, other: &&str) -> bool {
        self.0.text == *other
    }
}

impl Hash for Str {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.0.hash);
    }
}

/// Ordered by content, so sorted output is stable across runs.
impl Ord for Str {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        if std::ptr::eq(self.0, other.0) {
            std::cmp::Ordering::Equal
        } else {
            self.0.text.cmp(other.0.text)
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
        self.0.text
    }
}

impl AsRef<str> for Str {
    fn as_ref(&self) -> &str {
        self.0.text
    }
}

impl fmt::Display for Str {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.text)
    }
}

impl fmt::Debug for Str {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.0.text, f)
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
        serializer.serialize_str(self.0.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static APP: Entry = Entry::constant("app");

    #[test]
    fn one_interner_stores_a_text_once_and_any_two_equal_texts_are_equal() {
        let strings = Interner::new();
        let a = strings.intern("app");
        let b = strings.intern(String::from("app"));
        assert!(std::ptr::eq(a.0, b.0));
        assert_eq!(strings.get("app"), Some(a));
        assert_eq!(strings.get("never-interned"), None);
        // Made apart: other pointers, the same string.
        let other = Interner::new().intern("app");
        for s in [other, Str::new("app"), Str::from_static(&APP)] {
            assert!(!std::ptr::eq(a.0, s.0));
            assert_eq!(a, s);
            let set: std::collections::HashSet<Str> = [a, s].into();
            assert_eq!(set.len(), 1);
        }
        assert_ne!(a, strings.intern("apps"));
        assert_eq!(strings.intern(""), Str::empty());
    }

    #[test]
    fn worker_threads_get_the_strings_every_thread_gets() {
        use rayon::prelude::*;
        let strings = Interner::new();
        let texts: Vec<String> = (0..20_000)
            .map(|i| format!("value-{}", i % 5_000))
            .collect();
        let on_workers: Vec<Str> = texts.par_iter().map(|t| strings.intern(t)).collect();
        for (text, found) in texts.iter().zip(on_workers) {
            // Another thread's table, or none: the one copy all the same.
            assert!(std::ptr::eq(strings.intern(text).0, found.0));
            assert_eq!(found.as_str(), text);
        }
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

    #[test]
    fn constants_hash_as_interned_strings_do() {
        assert_eq!(APP.hash, Interner::new().intern("app").0.hash);
        // Every byte counts, past the first word too.
        assert_ne!(
            hash(b"kubernetes.io/hostname"),
            hash(b"kubernetes.io/hostnamf")
        );
        assert_ne!(hash(b"a"), hash(b"a\0"));
    }
}
