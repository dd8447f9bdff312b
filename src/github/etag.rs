//! Conditional requests: remembers the ETag and body of recent answers so a
//! repeated read can send `If-None-Match` and, on `304 Not Modified`, reuse
//! the body. GitHub does not count a 304 against the rate limit.

use std::sync::Mutex;

use hashlink::LruCache;

/// A bounded map of URL → (ETag, body); the least recently used entry goes
/// first when full, in constant time (`hashlink`'s linked map, which sqlx
/// already brings for its statement cache).
#[derive(Debug)]
pub struct EtagCache {
    capacity: usize,
    entries: Mutex<LruCache<String, Entry>>,
}

#[derive(Debug)]
struct Entry {
    etag: String,
    body: String,
}

impl EtagCache {
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            entries: Mutex::new(LruCache::new(capacity)),
        }
    }

    /// The ETag to send for `url`, if an answer is remembered; the answer
    /// counts as used.
    pub fn etag(&self, url: &str) -> Option<String> {
        let mut entries = self.entries.lock().ok()?;
        entries.get(url).map(|entry| entry.etag.clone())
    }

    /// The remembered body for `url`, if its ETag is still `etag`.
    pub fn body(&self, url: &str, etag: &str) -> Option<String> {
        let entries = self.entries.lock().ok()?;
        let entry = entries.peek(url)?;
        (entry.etag == etag).then(|| entry.body.clone())
    }

    /// Remembers an answer.
    pub fn put(&self, url: &str, etag: &str, body: &str) {
        if self.capacity == 0 {
            return;
        }
        if let Ok(mut entries) = self.entries.lock() {
            entries.insert(
                url.to_owned(),
                Entry {
                    etag: etag.to_owned(),
                    body: body.to_owned(),
                },
            );
        }
    }

    /// Forgets `url` (its answer was not what the cache promised).
    pub fn forget(&self, url: &str) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.remove(url);
        }
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
}
