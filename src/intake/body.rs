//! Reading a webhook body once the request has its turn: chunk by chunk,
//! never past [`MAX_BODY_BYTES`], whatever the body declared (a chunked
//! body declares nothing).

use axum::body::{Body, Bytes};
use futures_util::StreamExt;

/// GitHub caps payloads at 25 MiB; anything larger is not from GitHub.
pub const MAX_BODY_BYTES: usize = 25 * 1024 * 1024;

/// Why a body could not be read.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// More than [`MAX_BODY_BYTES`] arrived (413).
    #[error("body exceeds 25 MiB")]
    TooLarge,
    /// The connection broke or the framing was wrong (400).
    #[error("could not read the body: {0}")]
    Broken(#[source] axum::Error),
}

/// Reads `body` whole. A body that arrives in one chunk (most of them) is
/// that chunk, not a copy; otherwise `declared` (`Content-Length`, already
/// checked to be at most the limit) sizes the buffer once, so a body of
/// the largest size never takes twice its size while the buffer grows.
pub async fn read(body: Body, declared: Option<u64>) -> Result<Bytes, BodyError> {
    let mut stream = body.into_data_stream();
    let first = match stream.next().await {
        Some(chunk) => within_limit(0, chunk.map_err(broken)?)?,
        None => return Ok(Bytes::new()),
    };
    let Some(second) = stream.next().await else {
        return Ok(first);
    };
    let capacity = declared
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(0)
        .min(MAX_BODY_BYTES);
    let mut buffer = Vec::with_capacity(capacity.max(first.len()));
    buffer.extend_from_slice(&first);
    let mut next = Some(second);
    while let Some(chunk) = next {
        let chunk = within_limit(buffer.len(), chunk.map_err(broken)?)?;
        buffer.extend_from_slice(&chunk);
        next = stream.next().await;
    }
    Ok(Bytes::from(buffer))
}

/// `chunk`, unless it takes a body of `read` bytes past the limit.
fn within_limit(read: usize, chunk: Bytes) -> Result<Bytes, BodyError> {
    if read + chunk.len() > MAX_BODY_BYTES {
        return Err(BodyError::TooLarge);
    }
    Ok(chunk)
}

fn broken(e: axum::Error) -> BodyError {
    BodyError::Broken(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunked(chunks: Vec<Vec<u8>>) -> Body {
        let stream = futures_util::stream::iter(chunks.into_iter().map(Ok::<_, std::io::Error>));
        Body::from_stream(stream)
    }

    #[tokio::test]
    async fn a_body_in_chunks_should_be_read_whole() {
        let body = chunked(vec![b"{\"a\":".to_vec(), b" 1}".to_vec()]);
        assert_eq!(
            read(body, None).await.ok().as_deref(),
            Some(&b"{\"a\": 1}"[..])
        );
    }

    #[tokio::test]
    async fn a_body_in_one_chunk_should_be_that_chunk_not_a_copy() {
        let sent = Bytes::from(vec![b'x'; 7_700]);
        let read = read(Body::from(sent.clone()), Some(7_700)).await.ok();
        assert_eq!(read.as_ref().map(|b| b.as_ptr()), Some(sent.as_ptr()));
    }

    #[tokio::test]
    async fn a_single_chunk_past_the_limit_should_be_refused() {
        let body = Body::from(vec![b' '; MAX_BODY_BYTES + 1]);
        assert!(matches!(read(body, None).await, Err(BodyError::TooLarge)));
    }

    #[tokio::test]
    async fn a_chunked_body_past_the_limit_should_stop_being_read() {
        let mib = vec![b' '; 1024 * 1024];
        let body = chunked(vec![mib; 26]);
        assert!(matches!(read(body, None).await, Err(BodyError::TooLarge)));
    }

    #[tokio::test]
    async fn a_broken_body_should_say_so() {
        let stream = futures_util::stream::iter(vec![
            Ok(b"{".to_vec()),
            Err(std::io::Error::other("connection reset")),
        ]);
        let result = read(Body::from_stream(stream), Some(10)).await;
        let Err(error @ BodyError::Broken(_)) = result else {
            panic!("a broken body was read: {result:?}");
        };
        assert!(error.to_string().contains("connection reset"), "{error}");
    }
}
