//! The export gzip-compressed as it is written, for a reader that accepts
//! it: a catalog polling an export of 10,000 projects reads a fraction of
//! it (docs/performance.md). Compressed here rather than by a layer, so
//! that the handler knows which form it sends and gives each its own
//! `ETag`.

use std::io::Write;

use axum::body::Bytes;
use axum::http::{header, HeaderMap};
use flate2::write::GzEncoder;
use flate2::Compression;
use futures_util::{stream, Stream, StreamExt};

/// Why a compressed export stopped: the read under it failed, or the
/// compressor did.
#[derive(Debug, thiserror::Error)]
pub enum GzipError<E: std::error::Error + 'static> {
    #[error(transparent)]
    Read(E),
    #[error("gzip: {0}")]
    Compress(#[from] std::io::Error),
}

/// Whether `Accept-Encoding` accepts gzip (`gzip`, `x-gzip` or `*`, with
/// a weight above zero; a named `gzip` wins over `*`).
pub fn accepted(headers: &HeaderMap) -> bool {
    let mut star = None;
    for value in headers.get_all(header::ACCEPT_ENCODING) {
        let Ok(value) = value.to_str() else {
            continue;
        };
        for item in value.split(',') {
            let mut parts = item.split(';');
            let coding = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
            let weight = parts
                .filter_map(|p| p.trim().strip_prefix("q="))
                .filter_map(|q| q.trim().parse::<f32>().ok())
                .next()
                .unwrap_or(1.0);
            match coding.as_str() {
                "gzip" | "x-gzip" => return weight > 0.0,
                "*" => star = Some(weight > 0.0),
                _ => {}
            }
        }
    }
    star.unwrap_or(false)
}

/// `chunks` gzip-compressed, a chunk out whenever the compressor has one;
/// an error of the read ends the stream with that error.
pub fn compressed<S, E>(chunks: S) -> impl Stream<Item = Result<Bytes, GzipError<E>>> + Send
where
    S: Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: std::error::Error + Send + 'static,
{
    let encoder = GzEncoder::new(Vec::new(), Compression::default());
    let start = Some((Box::pin(chunks), encoder));
    stream::unfold(start, |state| async move {
        let (mut chunks, mut encoder) = state?;
        loop {
            match chunks.next().await {
                Some(Ok(bytes)) => {
                    if let Err(error) = encoder.write_all(&bytes) {
                        return Some((Err(GzipError::Compress(error)), None));
                    }
                    let out = std::mem::take(encoder.get_mut());
                    if !out.is_empty() {
                        return Some((Ok(Bytes::from(out)), Some((chunks, encoder))));
                    }
                }
                Some(Err(error)) => return Some((Err(GzipError::Read(error)), None)),
                None => {
                    let last = encoder
                        .finish()
                        .map(Bytes::from)
                        .map_err(GzipError::Compress);
                    return Some((last, None));
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;
    use std::io::Read;

    fn with(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::ACCEPT_ENCODING,
            HeaderValue::from_str(value).expect("header"),
        );
        headers
    }

    #[test]
    fn gzip_should_be_accepted_by_name_or_star_unless_weighed_zero() {
        assert!(accepted(&with("gzip")));
        assert!(accepted(&with("br, GZIP;q=0.5")));
        assert!(accepted(&with("*")));
        assert!(!accepted(&with("gzip;q=0")));
        assert!(!accepted(&with("gzip;q=0, *")));
        assert!(!accepted(&with("br, identity")));
        assert!(!accepted(&HeaderMap::new()));
    }

    #[tokio::test]
    async fn the_compressed_stream_should_unzip_to_the_chunks() {
        let chunks: Vec<Result<Bytes, std::io::Error>> = (0..50)
            .map(|i| Ok(Bytes::from(format!("chunk {i}\n").repeat(100))))
            .collect();
        let whole: Vec<u8> = chunks
            .iter()
            .flat_map(|c| c.as_ref().map(|b| b.to_vec()).unwrap_or_default())
            .collect();
        let out: Vec<Result<Bytes, _>> = compressed(stream::iter(chunks)).collect().await;
        let zipped: Vec<u8> = out
            .into_iter()
            .flat_map(|c| c.map(|b| b.to_vec()).unwrap_or_default())
            .collect();
        let mut unzipped = Vec::new();
        flate2::read::GzDecoder::new(&zipped[..])
            .read_to_end(&mut unzipped)
            .expect("gzip");
        assert_eq!(unzipped, whole);
        assert!(zipped.len() * 10 < whole.len());
    }

    #[tokio::test]
    async fn a_failed_read_should_end_the_stream_with_its_error() {
        let chunks = vec![
            Ok(Bytes::from_static(b"a")),
            Err(std::io::Error::other("gone")),
            Ok(Bytes::from_static(b"b")),
        ];
        let out: Vec<_> = compressed(stream::iter(chunks)).collect().await;
        assert!(matches!(out.last(), Some(Err(GzipError::Read(_)))));
    }
}
