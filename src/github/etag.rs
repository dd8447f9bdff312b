//! Conditional requests: remembers the ETag and body of recent answers so a
//! repeated read can send `If-None-Match` and, on `304 Not Modified`, reuse
//! the body. GitHub does not count a 304 against the rate limit.

use std::sync::Mutex;

use hashlink::LruCache;

/// How many bytes of answers the cache keeps by default (URL, ETag and body
/// together): 64 MiB, room for the 20,000 answers at a little over 3 KiB
/// each, where a listing page or a large `project.yaml` weighs more; the
/// least recently used go first beyond it (docs/dependencies.md, hashlink).
pub const DEFAULT_MAX_BYTES: usize = 64 << 20;

/// A map of URL → (ETag, body) bounded in answers and in bytes; the least
/// recently used entry goes first when either bound is reached, in constant
/// time (`hashlink`'s linked map, which sqlx already brings for its
/// statement cache). An answer larger than the byte bound is not kept.
#[derive(Debug)]
pub struct EtagCache {
    capacity: usize,
    max_bytes: usize,
    entries: Mutex<Entries>,
}

#[derive(Debug)]
struct Entries {
    map: LruCache<String, Entry>,
    /// The bytes of every entry's URL, ETag and body.
    bytes: usize,
}

#[derive(Debug)]
struct Entry {
    etag: String,
    body: String,
}

impl Entry {
    fn bytes(&self, url: &str) -> usize {
        url.len() + self.etag.len() + self.body.len()
    }
}

impl Entries {
    fn remove(&mut self, url: &str) {
        if let Some(old) = self.map.remove(url) {
            self.bytes -= old.bytes(url);
        }
    }

    fn remove_lru(&mut self) -> bool {
        match self.map.remove_lru() {
            Some((url, old)) => {
                self.bytes -= old.bytes(&url);
                true
            }
            None => false,
        }
    }
}

impl EtagCache {
    /// A cache of up to `capacity` answers and [`DEFAULT_MAX_BYTES`].
    pub fn new(capacity: usize) -> Self {
        Self::bounded(capacity, DEFAULT_MAX_BYTES)
    }

    /// A cache of up to `capacity` answers and `max_bytes` bytes of them.
    pub fn bounded(capacity: usize, max_bytes: usize) -> Self {
        Self {
            capacity,
            max_bytes,
            entries: Mutex::new(Entries {
                map: LruCache::new_unbounded(),
                bytes: 0,
            }),
        }
    }

    /// The ETag to send for `url`, if an answer is remembered; the answer
    /// counts as used.
    pub fn etag(&self, url: &str) -> Option<String> {
        let mut entries = self.entries.lock().ok()?;
        entries.map.get(url).map(|entry| entry.etag.clone())
    }

    /// The remembered body for `url`, if its ETag is still `etag`.
    pub fn body(&self, url: &str, etag: &str) -> Option<String> {
        let entries = self.entries.lock().ok()?;
        let entry = entries.map.peek(url)?;
        (entry.etag == etag).then(|| entry.body.clone())
    }

    /// Remembers an answer, making room by dropping the least recently
    /// used; an answer larger than the whole byte bound replaces nothing
    /// and is not kept (an older one for the same URL is forgotten).
    pub fn put(&self, url: &str, etag: &str, body: &str) {
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        entries.remove(url);
        let entry = Entry {
            etag: etag.to_owned(),
            body: body.to_owned(),
        };
        let size = entry.bytes(url);
        if self.capacity == 0 || size > self.max_bytes {
            return;
        }
        while entries.map.len() >= self.capacity || entries.bytes + size > self.max_bytes {
            if !entries.remove_lru() {
                break;
            }
        }
        entries.bytes += size;
        entries.map.insert(url.to_owned(), entry);
    }

    /// Forgets `url` (its answer was not what the cache promised).
    pub fn forget(&self, url: &str) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.remove(url);
        }
    }

    /// The bytes the remembered answers hold (URL, ETag and body).
    pub fn bytes(&self) -> usize {
        self.entries.lock().map_or(0, |entries| entries.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remembered_answer_should_come_back_by_etag() {
        let cache = EtagCache::new(10);
        cache.put("u", "\"e1\"", "body");
        assert_eq!(cache.etag("u").as_deref(), Some("\"e1\""));
        assert_eq!(cache.body("u", "\"e1\"").as_deref(), Some("body"));
        assert_eq!(cache.body("u", "\"e2\""), None);
    }

    #[test]
    fn a_full_cache_should_drop_the_least_recently_used() {
        let cache = EtagCache::new(2);
        cache.put("a", "1", "a");
        cache.put("b", "2", "b");
        assert!(cache.etag("a").is_some()); // a is now newer than b
        cache.put("c", "3", "c");
        assert!(cache.etag("b").is_none());
        assert!(cache.etag("a").is_some());
        assert!(cache.etag("c").is_some());
    }

    #[test]
    fn a_zero_capacity_cache_should_remember_nothing() {
        let cache = EtagCache::new(0);
        cache.put("a", "1", "a");
        assert!(cache.etag("a").is_none());
    }

    #[test]
    fn a_cache_should_stay_within_its_bytes_dropping_the_least_recently_used() {
        // Each answer here weighs 1 + 1 + 100 bytes; 350 bytes hold three.
        let cache = EtagCache::bounded(1_000, 350);
        let body = "x".repeat(100);
        for url in ["a", "b", "c"] {
            cache.put(url, "1", &body);
        }
        assert_eq!(cache.bytes(), 306);
        assert!(cache.etag("a").is_some()); // b is now the least recently used
        cache.put("d", "1", &body);
        assert!(cache.bytes() <= 350, "{} bytes", cache.bytes());
        assert!(cache.etag("b").is_none(), "the least recently used stays");
        for url in ["a", "c", "d"] {
            assert!(cache.etag(url).is_some(), "{url} was dropped");
        }
        // Many small answers give way to one large one.
        let large = "y".repeat(300);
        cache.put("e", "1", &large);
        assert!(cache.bytes() <= 350, "{} bytes", cache.bytes());
        assert_eq!(cache.body("e", "1").as_deref(), Some(large.as_str()));
    }

    #[test]
    fn an_answer_larger_than_the_bound_should_not_be_kept_nor_keep_an_old_one() {
        let cache = EtagCache::bounded(10, 100);
        cache.put("a", "1", "small");
        cache.put("b", "1", "small");
        cache.put("a", "2", &"z".repeat(200));
        assert_eq!(cache.etag("a"), None);
        assert_eq!(cache.etag("b").as_deref(), Some("1"));
        assert_eq!(cache.bytes(), "b1small".len());
    }

    #[test]
    fn replacing_and_forgetting_should_give_back_their_bytes() {
        let cache = EtagCache::bounded(10, 1_000);
        cache.put("a", "1", "first");
        cache.put("a", "22", "second");
        assert_eq!(cache.bytes(), "a22second".len());
        cache.forget("a");
        assert_eq!(cache.bytes(), 0);
    }

    #[test]
    fn the_default_cache_should_be_bounded_in_bytes() {
        let cache = EtagCache::new(20_000);
        let body = "x".repeat(1 << 20);
        for i in 0..100 {
            cache.put(&format!("u{i}"), "1", &body);
        }
        assert!(
            cache.bytes() <= DEFAULT_MAX_BYTES,
            "{} bytes",
            cache.bytes()
        );
    }
}
