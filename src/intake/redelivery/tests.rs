use super::*;

fn attempt(id: i64, guid: &str, minutes_ago: i64, status_code: i64) -> LoggedAttempt {
    LoggedAttempt {
        id,
        guid: guid.to_owned(),
        delivered_at: Utc::now() - chrono::Duration::minutes(minutes_ago),
        status_code,
        event: "push".to_owned(),
        action: None,
        repository_id: None,
    }
}

#[test]
fn missed_should_keep_events_no_attempt_delivered() {
    let log = vec![
        attempt(1, "lost", 30, 0),
        attempt(2, "broken", 20, 500),
        attempt(3, "fine", 10, 200),
        attempt(4, "saved", 9, 503),
        attempt(5, "saved", 5, 202),
    ];
    let guids: Vec<String> = missed(log).into_iter().map(|a| a.guid).collect();
    assert_eq!(guids, ["lost", "broken"]);
}

#[test]
fn missed_should_name_the_newest_failed_attempt_of_an_event() {
    let log = vec![attempt(7, "twice", 1, 502), attempt(3, "twice", 40, 0)];
    let ids: Vec<i64> = missed(log).into_iter().map(|a| a.id).collect();
    assert_eq!(ids, [7]);
}

#[test]
fn logged_attempt_should_read_githubs_shape() {
    let body = r#"[{"id": 12345678901, "guid": "0b989ba4-242f-11e5-81e1-c7b6966d2516",
        "delivered_at": "2019-06-03T00:57:16Z", "redelivery": false, "duration": 0.27,
        "status": "failed to connect", "status_code": 0, "event": "push", "action": null,
        "installation_id": 123, "repository_id": 456, "throttled_at": null}]"#;
    let page: Vec<LoggedAttempt> = serde_json::from_str(body).unwrap_or_default();
    assert_eq!(page.len(), 1);
    assert_eq!(page[0].id, 12_345_678_901);
    assert_eq!(page[0].status_code, 0);
    assert_eq!(page[0].repository_id, Some(456));
}

#[test]
fn same_origin_should_refuse_another_host() {
    let origin = Url::parse("https://api.github.com/")
        .map(|u| u.origin())
        .expect("a URL");
    assert!(same_origin(
        "https://api.github.com/app/hook/deliveries?cursor=v1_1",
        &origin
    )
    .is_ok());
    assert!(same_origin("https://evil.example.com/app/hook/deliveries", &origin).is_err());
    assert!(same_origin("not a url", &origin).is_err());
}
