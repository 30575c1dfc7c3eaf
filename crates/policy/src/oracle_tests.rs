//! The action tables against MinIO's (`testdata/minio-vectors.json`,
//! written by `testdata/gen` from MinIO's policy package).

use crate::action;
use crate::condition::key::KeyName;

#[test]
fn action_tables_are_minios() {
    let v: serde_json::Value =
        serde_json::from_str(include_str!("../testdata/minio-vectors.json")).unwrap();
    let actions = v["actions"].as_array().unwrap();
    assert!(actions.len() > 40);
    for c in actions {
        let name = c["action"].as_str().unwrap();
        let lower = name.to_ascii_lowercase();
        let flag = |k: &str| c[k].as_bool().unwrap();
        if name == "s3:getobject" {
            // MinIO compares names exactly; the crate does not (crate
            // docs), so a name in the wrong case differs.
            assert!(action::is_valid_s3(&lower) && !flag("valid"));
            continue;
        }
        assert_eq!(action::is_valid_s3(&lower), flag("valid"), "{name} valid");
        assert_eq!(
            action::is_object_action(&lower),
            flag("object"),
            "{name} object"
        );
        assert_eq!(action::is_admin(&lower), flag("admin"), "{name} admin");
        assert_eq!(action::is_kms(&lower), flag("kms"), "{name} kms");
        assert_eq!(action::is_sts(&lower), flag("sts"), "{name} sts");
        let keys = action::keys_for(&lower);
        let mut ours: Vec<&str> = KeyName::ALL
            .iter()
            .filter(|k| keys.contains(**k))
            .map(|k| k.name())
            .collect();
        ours.sort_unstable();
        let theirs: Vec<&str> = c["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_str().unwrap())
            .collect();
        assert_eq!(ours, theirs, "{name} keys");
    }
}
