use super::*;

#[test]
fn next_link_should_pick_the_next_page() {
    let link = "<https://api.github.com/repositories/1300192/issues?page=2>; rel=\"prev\", \
                <https://api.github.com/repositories/1300192/issues?page=4>; rel=\"next\", \
                <https://api.github.com/repositories/1300192/issues?page=515>; rel=\"last\"";
    assert_eq!(
        next_link(link).as_deref(),
        Some("https://api.github.com/repositories/1300192/issues?page=4")
    );
    assert_eq!(next_link("<https://x/?page=1>; rel=\"first\""), None);
}

#[test]
fn join_should_keep_the_enterprise_prefix_and_encode_segments() {
    let base = Url::parse("https://ghe.example.com/api/v3").unwrap();
    let url = join(
        &base,
        ["repos", "acme", "a b", "contents", "dir", "project.yaml"],
    )
    .unwrap();
    assert_eq!(
        url.as_str(),
        "https://ghe.example.com/api/v3/repos/acme/a%20b/contents/dir/project.yaml"
    );
    let root = Url::parse("https://api.github.com/").unwrap();
    assert_eq!(
        join(&root, ["app", "installations"]).unwrap().as_str(),
        "https://api.github.com/app/installations"
    );
}

#[test]
fn github_message_should_read_the_error_body() {
    let body = r#"{"message":"Not Found","documentation_url":"https://docs.github.com/rest"}"#;
    assert_eq!(github_message(body), "Not Found");
    assert_eq!(github_message("<html>oops</html>"), "<html>oops</html>");
    assert_eq!(github_message(""), "(empty body)");
}
