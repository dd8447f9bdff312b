use super::*;

fn blobs(pairs: &[(&str, &str)]) -> FileBlobs {
    pairs
        .iter()
        .map(|(p, b)| ((*p).to_owned(), (*b).to_owned()))
        .collect()
}

#[test]
fn changed_should_list_added_modified_and_removed_paths_in_order() {
    let old = blobs(&[("a", "1"), ("b", "2"), ("c", "3")]);
    let new = blobs(&[("a", "1"), ("b", "9"), ("d", "4")]);
    assert_eq!(changed(Some(&old), &new), ["b", "c", "d"]);
    assert!(changed(Some(&new), &new).is_empty());
}

#[test]
fn nothing_recorded_should_count_every_file_as_changed() {
    let new = blobs(&[("a", "1"), ("b", "2")]);
    assert_eq!(changed(None, &new), ["a", "b"]);
}
