//! Reading a webhook body once the request has its turn: chunk by chunk,
//! never past [`MAX_BODY_BYTES`], whatever the body declared (a chunked
//! body declares nothing).

use axum::body::Body;
use futures_util::StreamExt;

use super::gate::MAX_BODY_BYTES;

/// Why a body could not be read.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// More than [`MAX_BODY_BYTES`] arrived (413).
    #[error("body exceeds 25 MiB")]
    TooLarge,
    /// The connection broke or the framing was wrong (400).
    #[error("could not read the body: {0}")]
    Broken(String),
}

/// Reads `body` whole. `declared` (`Content-Length`, already checked to be
/// at most the limit) sizes the buffer once, so a body of the largest size
/// never takes twice its size while the buffer grows.
pub async fn read(body: Body, declared: Option<u64>) -> Result<Vec<u8>, BodyError> {
    let capacity = declared
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(0)
        .min(MAX_BODY_BYTES);
    let mut buffer = Vec::with_capacity(capacity);
    let mut stream = body.into_data_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| BodyError::Broken(e.to_string()))?;
        if buffer.len() + chunk.len() > MAX_BODY_BYTES {
            return Err(BodyError::TooLarge);
        }
        buffer.extend_from_slice(&chunk);
    }
    Ok(buffer)
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
        assert_eq!(read(body, None).await.ok(), Some(b"{\"a\": 1}".to_vec()));
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
        assert!(matches!(result, Err(BodyError::Broken(m)) if m.contains("connection reset")));
    }
}
