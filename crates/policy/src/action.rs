//! Action names: the S3, admin, KMS and STS actions MinIO accepts in
//! policies, which condition keys each S3 action accepts, and compiled
//! action patterns.
//!
//! Names are compared without ASCII case, as AWS compares them (MinIO
//! compares them exactly; every spelling it accepts is accepted here).

use crate::condition::key::{ALL_SET, COMMON_SET, KeyName, KeySet};
use crate::wildcard;

use KeyName as K;

/// One S3 action MinIO knows: its name, whether it acts on objects (and so
/// needs an object resource in a bucket policy), and the condition keys it
/// accepts beyond the common ones.
struct S3Action {
    name: &'static str,
    object: bool,
    keys: KeySet,
}

const fn bucket(name: &'static str) -> S3Action {
    S3Action {
        name,
        object: false,
        keys: KeySet::of(&[]),
    }
}

const fn object(name: &'static str, keys: &[KeyName]) -> S3Action {
    S3Action {
        name,
        object: true,
        keys: KeySet::of(keys),
    }
}

const SSE: [KeyName; 3] = [K::Sse, K::SseCustomerAlgorithm, K::SseKmsKeyId];
const VERSION_TAG: [KeyName; 2] = [K::VersionId, K::ExistingObjectTag];
const LIST: KeySet = KeySet::of(&[K::Prefix, K::Delimiter, K::MaxKeys]);

/// MinIO's `supportedActions` with `supportedObjectActions` and
/// `IAMActionConditionKeyMap` folded in.
const S3_ACTIONS: &[S3Action] = &[
    S3Action {
        name: "s3:*",
        object: true,
        keys: ALL_SET,
    },
    object("s3:AbortMultipartUpload", &[]),
    bucket("s3:CreateBucket"),
    bucket("s3:DeleteBucket"),
    bucket("s3:ForceDeleteBucket"),
    bucket("s3:DeleteBucketPolicy"),
    bucket("s3:DeleteBucketCors"),
    object("s3:DeleteObject", &[K::VersionId]),
    bucket("s3:GetBucketLocation"),
    bucket("s3:GetBucketNotification"),
    bucket("s3:GetBucketPolicy"),
    bucket("s3:GetBucketCors"),
    object(
        "s3:GetObject",
        &[SSE[0], SSE[1], SSE[2], K::VersionId, K::ExistingObjectTag],
    ),
    object("s3:GetObjectAttributes", &[K::ExistingObjectTag]),
    bucket("s3:HeadBucket"),
    bucket("s3:ListAllMyBuckets"),
    S3Action {
        name: "s3:ListBucket",
        object: false,
        keys: LIST,
    },
    bucket("s3:GetBucketPolicyStatus"),
    S3Action {
        name: "s3:ListBucketVersions",
        object: false,
        keys: LIST,
    },
    bucket("s3:ListBucketMultipartUploads"),
    bucket("s3:ListenNotification"),
    bucket("s3:ListenBucketNotification"),
    object("s3:ListMultipartUploadParts", &[]),
    bucket("s3:PutLifecycleConfiguration"),
    bucket("s3:GetLifecycleConfiguration"),
    bucket("s3:PutBucketNotification"),
    bucket("s3:PutBucketPolicy"),
    bucket("s3:PutBucketCors"),
    object(
        "s3:PutObject",
        &[
            K::CopySource,
            SSE[0],
            SSE[1],
            SSE[2],
            K::MetadataDirective,
            K::StorageClass,
            K::VersionId,
            K::LockRetainUntilDate,
            K::LockMode,
            K::LockLegalHold,
            K::RequestObjectTagKeys,
            K::RequestObjectTag,
        ],
    ),
    object(
        "s3:BypassGovernanceRetention",
        &[
            K::VersionId,
            K::LockRemainingRetentionDays,
            K::LockRetainUntilDate,
            K::LockMode,
            K::LockLegalHold,
            K::RequestObjectTagKeys,
            K::RequestObjectTag,
        ],
    ),
    object(
        "s3:PutObjectRetention",
        &[
            SSE[0],
            SSE[1],
            SSE[2],
            K::LockRemainingRetentionDays,
            K::LockRetainUntilDate,
            K::LockMode,
            K::VersionId,
        ],
    ),
    object(
        "s3:GetObjectRetention",
        &[SSE[0], SSE[1], SSE[2], K::VersionId],
    ),
    object("s3:GetObjectLegalHold", &[]),
    object(
        "s3:PutObjectLegalHold",
        &[SSE[0], SSE[1], SSE[2], K::LockLegalHold, K::VersionId],
    ),
    bucket("s3:GetBucketObjectLockConfiguration"),
    bucket("s3:PutBucketObjectLockConfiguration"),
    bucket("s3:GetBucketTagging"),
    S3Action {
        name: "s3:PutBucketTagging",
        object: false,
        keys: KeySet::of(&[K::RequestObjectTagKeys, K::RequestObjectTag]),
    },
    object("s3:GetObjectVersion", &VERSION_TAG),
    object("s3:GetObjectVersionAttributes", &VERSION_TAG),
    object("s3:GetObjectVersionTagging", &VERSION_TAG),
    object("s3:DeleteObjectVersion", &[K::VersionId]),
    object("s3:DeleteObjectVersionTagging", &VERSION_TAG),
    object(
        "s3:PutObjectVersionTagging",
        &[
            K::VersionId,
            K::ExistingObjectTag,
            K::RequestObjectTagKeys,
            K::RequestObjectTag,
        ],
    ),
    object("s3:GetObjectTagging", &VERSION_TAG),
    object(
        "s3:PutObjectTagging",
        &[
            K::VersionId,
            K::ExistingObjectTag,
            K::RequestObjectTagKeys,
            K::RequestObjectTag,
        ],
    ),
    object("s3:DeleteObjectTagging", &VERSION_TAG),
    bucket("s3:PutEncryptionConfiguration"),
    bucket("s3:GetEncryptionConfiguration"),
    bucket("s3:PutBucketVersioning"),
    bucket("s3:GetBucketVersioning"),
    bucket("s3:GetReplicationConfiguration"),
    bucket("s3:PutReplicationConfiguration"),
    object("s3:ReplicateObject", &VERSION_TAG),
    object("s3:ReplicateDelete", &VERSION_TAG),
    object("s3:ReplicateTags", &VERSION_TAG),
    object("s3:GetObjectVersionForReplication", &VERSION_TAG),
    object("s3:RestoreObject", &[]),
    object("s3:ResetBucketReplicationState", &[]),
    object("s3:PutObjectFanOut", &[]),
];

/// MinIO's `supportedAdminActions`. Some admin action names MinIO defines
/// (`admin:ForceUnlock`, `admin:LicenseInfo`, `admin:InspectData`,
/// `admin:GenerateBatchJob`, `admin:ClusterInfo`, `admin:PoolList`,
/// `admin:PoolInfo`, `admin:SetInfo`, `admin:DriveInfo`) are missing from
/// it, so its policies refuse them; so do these.
pub(crate) const ADMIN_ACTIONS: &[&str] = &[
    "admin:*",
    "admin:Heal",
    "admin:StorageInfo",
    "admin:DataUsageInfo",
    "admin:TopLocksInfo",
    "admin:Profiling",
    "admin:Prometheus",
    "admin:ServerTrace",
    "admin:ConsoleLog",
    "admin:KMSCreateKey",
    "admin:KMSKeyStatus",
    "admin:ServerInfo",
    "admin:OBDInfo",
    "admin:BandwidthMonitor",
    "admin:ServerUpdate",
    "admin:ServiceRestart",
    "admin:ServiceStop",
    "admin:ServiceFreeze",
    "admin:ConfigUpdate",
    "admin:CreateUser",
    "admin:DeleteUser",
    "admin:ListUsers",
    "admin:EnableUser",
    "admin:DisableUser",
    "admin:GetUser",
    "admin:AddUserToGroup",
    "admin:RemoveUserFromGroup",
    "admin:GetGroup",
    "admin:ListGroups",
    "admin:EnableGroup",
    "admin:DisableGroup",
    "admin:CreateServiceAccount",
    "admin:UpdateServiceAccount",
    "admin:RemoveServiceAccount",
    "admin:ListServiceAccounts",
    "admin:ListTemporaryAccounts",
    "admin:CreatePolicy",
    "admin:DeletePolicy",
    "admin:GetPolicy",
    "admin:AttachUserOrGroupPolicy",
    "admin:UpdatePolicyAssociation",
    "admin:ListUserPolicies",
    "admin:SetBucketQuota",
    "admin:GetBucketQuota",
    "admin:SetBucketTarget",
    "admin:GetBucketTarget",
    "admin:ReplicationDiff",
    "admin:SetTier",
    "admin:ListTier",
    "admin:Decommission",
    "admin:Rebalance",
    "admin:SiteReplicationAdd",
    "admin:SiteReplicationDisable",
    "admin:SiteReplicationInfo",
    "admin:SiteReplicationOperation",
    "admin:SiteReplicationRemove",
    "admin:SiteReplicationResync",
    "admin:ImportBucketMetadata",
    "admin:ExportBucketMetadata",
    "admin:ExportIAM",
    "admin:ImportIAM",
    "admin:ListBatchJobs",
    "admin:DescribeBatchJob",
    "admin:StartBatchJob",
    "admin:CancelBatchJob",
];

/// MinIO's `supportedKMSActions`.
pub(crate) const KMS_ACTIONS: &[&str] = &[
    "kms:*",
    "kms:CreateKey",
    "kms:DeleteKey",
    "kms:ListKeys",
    "kms:ImportKey",
    "kms:DescribePolicy",
    "kms:AssignPolicy",
    "kms:DeletePolicy",
    "kms:SetPolicy",
    "kms:GetPolicy",
    "kms:ListPolicies",
    "kms:DescribeIdentity",
    "kms:DescribeSelfIdentity",
    "kms:DeleteIdentity",
    "kms:ListIdentities",
    "kms:KeyStatus",
    "kms:Status",
    "kms:API",
    "kms:Metrics",
    "kms:Version",
    "kms:AuditLog",
    "kms:ErrorLog",
];

/// MinIO's `supportedSTSActions`. Its "all STS actions" is the bare `*`,
/// which makes any statement whose action list holds `*` an STS statement
/// in an identity policy (resources ignored, only `sts:DurationSeconds` as
/// a condition key); that is kept, as it decides what such policies allow.
pub(crate) const STS_ACTIONS: &[&str] = &["sts:AssumeRoleWithWebIdentity", "*"];

fn listed(table: &[&str], lower: &str) -> bool {
    table.iter().any(|a| a.eq_ignore_ascii_case(lower))
}

/// Whether `lower` names an admin action exactly (no wildcards but
/// `admin:*` itself).
pub(crate) fn is_admin(lower: &str) -> bool {
    listed(ADMIN_ACTIONS, lower)
}

pub(crate) fn is_kms(lower: &str) -> bool {
    listed(KMS_ACTIONS, lower)
}

pub(crate) fn is_sts(lower: &str) -> bool {
    listed(STS_ACTIONS, lower)
}

fn s3_matching(lower: &str) -> impl Iterator<Item = &'static S3Action> + '_ {
    S3_ACTIONS
        .iter()
        .filter(move |a| wildcard::matches_ascii_nocase(lower, a.name))
}

/// Whether the pattern matches at least one S3 action (MinIO's
/// `Action.IsValid`).
pub(crate) fn is_valid_s3(lower: &str) -> bool {
    s3_matching(lower).next().is_some()
}

/// Whether the pattern matches an action on objects (`Action.IsObjectAction`).
pub(crate) fn is_object_action(lower: &str) -> bool {
    s3_matching(lower).any(|a| a.object)
}

/// The condition keys a statement with this action pattern may use: the
/// common ones and those of every action the pattern matches
/// (`IAMActionConditionKeyMap.Lookup`).
pub(crate) fn keys_for(lower: &str) -> KeySet {
    s3_matching(lower).fold(COMMON_SET, |set, a| set.union(a.keys))
}

/// An action pattern of a statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ActionPattern {
    /// As written (serialised back as is).
    pub(crate) text: String,
    /// Lower-cased once, matched against request actions without case.
    pub(crate) lower: String,
}

impl ActionPattern {
    pub(crate) fn new(text: String) -> ActionPattern {
        let lower = text.to_ascii_lowercase();
        ActionPattern { text, lower }
    }

    /// Whether the request's `action` falls under this pattern. MinIO lets
    /// `s3:GetObjectVersion` grant `s3:GetObject` as well.
    pub(crate) fn matches(&self, action: &str) -> bool {
        wildcard::matches_ascii_nocase(&self.lower, action)
            || (self.lower == "s3:getobjectversion" && action.eq_ignore_ascii_case("s3:GetObject"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validity() {
        for a in [
            "s3:GetObject",
            "s3:getobject",
            "s3:*",
            "*",
            "s3:Get*",
            "s3:?etObject",
            "S3:LISTBUCKET",
        ] {
            assert!(is_valid_s3(&a.to_ascii_lowercase()), "{a}");
        }
        for a in ["s3:Nope", "s3:GetObjects", "admin:ServerInfo", "s4:*", ""] {
            assert!(!is_valid_s3(&a.to_ascii_lowercase()), "{a}");
        }
        assert!(is_admin("admin:serverinfo"));
        assert!(!is_admin("admin:server*"));
        assert!(!is_admin("admin:forceunlock"));
        assert!(is_kms("kms:*"));
        assert!(is_sts("*"));
    }

    #[test]
    fn object_actions_and_keys() {
        assert!(is_object_action("s3:getobject"));
        assert!(is_object_action("s3:*"));
        assert!(is_object_action("*"));
        assert!(!is_object_action("s3:listbucket"));
        assert!(!is_object_action("s3:list*bucket"));
        assert!(is_object_action("s3:list*"));
        assert!(keys_for("s3:listbucket").contains(K::Prefix));
        assert!(!keys_for("s3:getobject").contains(K::Prefix));
        assert!(keys_for("s3:getobject").contains(K::SourceIp));
        assert!(keys_for("s3:get*").contains(K::ExistingObjectTag));
        assert!(keys_for("s3:*").contains(K::StsDurationSeconds));
        assert!(!keys_for("s3:deletebucket").contains(K::VersionId));
    }

    #[test]
    fn patterns() {
        let p = ActionPattern::new("s3:Get*".into());
        assert!(p.matches("s3:GetObject"));
        assert!(p.matches("S3:GETOBJECT"));
        assert!(!p.matches("s3:PutObject"));
        let v = ActionPattern::new("s3:GetObjectVersion".into());
        assert!(v.matches("s3:GetObject"));
        assert!(v.matches("s3:GetObjectVersion"));
        assert!(!v.matches("s3:GetObjectTagging"));
    }
}
