//! The cache on its own: sharing across models, links never written through, verify, gc.

use std::fs;
use std::path::Path;

use super::entry::Lookup;
use super::names::StepNames;
use super::*;
use crate::fingerprint::{StepKey, StepRecord, test_facts};

/// A project with model `model`'s one output of `content`, its record and names.
fn built(root: &Path, model: &str, content: &[u8], key: &str) -> (StepNames, StepRecord) {
    let artifact = format!("ctx/{model}/vision.dlc");
    fs::create_dir_all(root.join("ctx").join(model)).unwrap();
    fs::write(root.join(&artifact), content).unwrap();
    let sha = xtask_base::hashing::sha256_bytes(content);
    let record = StepRecord {
        key: StepKey {
            key: key.into(),
            parts: Default::default(),
        },
        outputs: [(artifact.clone(), sha)].into(),
        finished_unix: 0,
        seconds: 1.0,
        facts: test_facts(),
        restored_from_cache: None,
        detail: Default::default(),
    };
    let names = StepNames {
        model: model.into(),
        component: "vision".into(),
        step: "convert".into(),
        inputs: vec!["onnx/shared/vision.onnx".into()],
        outputs: vec![artifact],
    };
    (names, record)
}

fn key(c: char) -> String {
    c.to_string().repeat(64)
}

fn hit(cache: &StepCache, key: &str, names: &StepNames) -> Option<StepRecord> {
    let staging = tempfile::tempdir().unwrap();
    match cache.lookup(key, names, staging.path()) {
        Lookup::Hit { record, staged } => {
            assert_eq!(staged[0].1, names.outputs[0]);
            Some(*record)
        }
        Lookup::Miss => None,
        Lookup::Refused(why) => panic!("refused: {why}"),
    }
}

#[test]
fn two_models_share_one_entry_and_one_stored_file() {
    let (dir, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let cache = StepCache::open(dir.path()).unwrap();
    let (a, rec) = built(root.path(), "a", b"dlc bytes", &key('1'));
    cache.store(root.path(), &a, &rec, false).unwrap();
    let (b, _) = built(root.path(), "b", b"dlc bytes", &key('1'));
    // Model b restores a's entry under b's own paths; a's entry is still there for a.
    let got = hit(&cache, &key('1'), &b).unwrap();
    assert_eq!(
        got.outputs.keys().collect::<Vec<_>>(),
        vec!["ctx/b/vision.dlc"]
    );
    assert!(hit(&cache, &key('1'), &a).is_some());
    // A second entry with the same bytes costs them once.
    let (_, mut rec2) = built(root.path(), "b", b"dlc bytes", &key('2'));
    rec2.key.key = key('2');
    cache.store(root.path(), &b, &rec2, false).unwrap();
    let survey = cache.survey().unwrap();
    assert_eq!((survey.entries.len(), survey.blobs.len()), (2, 1));
    assert_eq!(survey.stored_bytes() * 2, survey.unshared_bytes());
}

/// Every place in the cache replaced by a link to a file outside: stores replace the links
/// and the files outside keep their bytes.
#[test]
fn a_link_anywhere_in_the_cache_is_never_written_through() {
    let (dir, root, outside) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let cache = StepCache::open(dir.path()).unwrap();
    let (a, rec) = built(root.path(), "a", b"new bytes", &key('3'));
    let sha = rec.outputs.values().next().unwrap().clone();
    let places = [
        cache.entry_file(&key('3')).unwrap(),
        cache.stamp_file(&key('3')).unwrap(),
        cache.blob(&sha).unwrap(),
    ];
    for (i, place) in places.iter().enumerate() {
        let target = outside.path().join(format!("victim-{i}"));
        fs::write(&target, b"precious").unwrap();
        std::os::unix::fs::symlink(&target, place).unwrap();
    }
    // The entry is a link: refused, never read through.
    assert!(matches!(
        cache.lookup(&key('3'), &a, outside.path()),
        Lookup::Refused(_)
    ));
    cache.store(root.path(), &a, &rec, false).unwrap();
    for i in 0..places.len() {
        let victim = outside.path().join(format!("victim-{i}"));
        assert_eq!(fs::read(&victim).unwrap(), b"precious", "{i}");
    }
    for place in &places {
        assert!(fs::symlink_metadata(place).unwrap().file_type().is_file());
    }
    assert!(hit(&cache, &key('3'), &a).is_some());
    // A folder of the cache replaced by a link: the cache is refused and a store writes
    // nothing there.
    let blobs = cache.blobs();
    fs::rename(&blobs, dir.path().join("moved")).unwrap();
    std::os::unix::fs::symlink(outside.path(), &blobs).unwrap();
    assert!(StepCache::open(dir.path()).is_err());
    let before = fs::read_dir(outside.path()).unwrap().count();
    let (b, rec) = built(root.path(), "b", b"other", &key('4'));
    let err = cache.store(root.path(), &b, &rec, false).unwrap_err();
    assert!(format!("{err:#}").contains("link"), "{err:#}");
    assert_eq!(fs::read_dir(outside.path()).unwrap().count(), before);
}

#[test]
fn a_flipped_byte_is_found_by_verify_refused_at_restore_and_replaced() {
    let (dir, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let cache = StepCache::open(dir.path()).unwrap();
    let (a, rec) = built(root.path(), "a", b"0123456789", &key('5'));
    cache.store(root.path(), &a, &rec, false).unwrap();
    assert_eq!(cache.verify().unwrap(), (1, vec![]));
    let blob = cache.blob(rec.outputs.values().next().unwrap()).unwrap();
    let mut bytes = fs::read(&blob).unwrap();
    bytes[4] ^= 1;
    fs::write(&blob, bytes).unwrap();
    let (n, bad) = cache.verify().unwrap();
    assert_eq!((n, bad.len()), (1, 1));
    assert_eq!(
        (bad[0].key.as_str(), bad[0].file.as_str()),
        (key('5').as_str(), "ctx/a/vision.dlc")
    );
    let staging = tempfile::tempdir().unwrap();
    let Lookup::Refused(why) = cache.lookup(&key('5'), &a, staging.path()) else {
        panic!("a flipped byte was restored");
    };
    assert!(why.contains("ctx/a/vision.dlc"), "{why}");
    // The build that follows stores the right bytes again.
    cache.store(root.path(), &a, &rec, false).unwrap();
    assert_eq!(cache.verify().unwrap(), (1, vec![]));
    assert!(hit(&cache, &key('5'), &a).is_some());
}

#[test]
fn gc_evicts_least_recently_used_entries_and_frees_a_shared_file_with_its_last_entry() {
    let (dir, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let cache = StepCache::open(dir.path()).unwrap();
    let store = |c: char, model: &str, content: &[u8], age_s: u64| {
        let (names, rec) = built(root.path(), model, content, &key(c));
        cache.store(root.path(), &names, &rec, false).unwrap();
        let t = std::time::SystemTime::now() - std::time::Duration::from_secs(age_s);
        let stamp = cache.stamp_file(&key(c)).unwrap();
        fs::File::open(stamp).unwrap().set_modified(t).unwrap();
    };
    store('a', "x", &[1u8; 1000], 300);
    store('b', "y", &[1u8; 1000], 200); // the same bytes as a
    store('c', "z", &[2u8; 1000], 100);
    // 2000 bytes stored; a cap of 1500 removes a (its file is still b's), then b (the file
    // goes with it).
    let (removed, freed, kept) = cache.gc(1500).unwrap();
    assert_eq!((removed, freed, kept), (2, 1000, 1000));
    let left: Vec<String> = cache.list().unwrap().into_iter().map(|l| l.key).collect();
    assert_eq!(left, vec![key('c')]);
    // rm by model and by key prefix.
    assert_eq!(cache.keys_of_model("z").unwrap(), vec![key('c')]);
    assert_eq!(cache.resolve("cccccccc").unwrap(), key('c'));
    assert_eq!(cache.remove(&[key('c')]).unwrap(), 1000);
    assert!(cache.survey().unwrap().blobs.is_empty());
}
