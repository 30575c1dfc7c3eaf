//! Condition keys: the names MinIO knows (its `AllSupportedKeys`), sets of
//! them, and a policy's use of one (a name and, for the tag keys, the part
//! after `/`).
//!
//! Names are compared without ASCII case, as AWS compares them (MinIO
//! compares them exactly; every spelling it accepts is accepted here).

use crate::PolicyError;

macro_rules! key_names {
    ($($variant:ident = $name:literal,)*) => {
        /// A condition key name MinIO knows.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[repr(u8)]
        pub(crate) enum KeyName {
            $($variant,)*
        }

        impl KeyName {
            /// Every name, in MinIO's `AllSupportedKeys` order.
            pub(crate) const ALL: &'static [KeyName] = &[$(KeyName::$variant,)*];

            /// The name as MinIO spells it.
            pub(crate) const fn name(self) -> &'static str {
                match self {
                    $(KeyName::$variant => $name,)*
                }
            }

            /// The policy variable that stands for the key's value.
            pub(crate) const fn variable(self) -> &'static str {
                match self {
                    $(KeyName::$variant => concat!("${", $name, "}"),)*
                }
            }
        }
    };
}

key_names! {
    SignatureVersion = "s3:signatureversion",
    AuthType = "s3:authType",
    SignatureAge = "s3:signatureAge",
    CopySource = "s3:x-amz-copy-source",
    Sse = "s3:x-amz-server-side-encryption",
    SseCustomerAlgorithm = "s3:x-amz-server-side-encryption-customer-algorithm",
    MetadataDirective = "s3:x-amz-metadata-directive",
    StorageClass = "s3:x-amz-storage-class",
    SseKmsKeyId = "s3:x-amz-server-side-encryption-aws-kms-key-id",
    ContentSha256 = "s3:x-amz-content-sha256",
    LocationConstraint = "s3:LocationConstraint",
    Prefix = "s3:prefix",
    Delimiter = "s3:delimiter",
    MaxKeys = "s3:max-keys",
    VersionId = "s3:versionid",
    LockRemainingRetentionDays = "s3:object-lock-remaining-retention-days",
    LockMode = "s3:object-lock-mode",
    LockLegalHold = "s3:object-lock-legal-hold",
    LockRetainUntilDate = "s3:object-lock-retain-until-date",
    Referer = "aws:Referer",
    SourceIp = "aws:SourceIp",
    UserAgent = "aws:UserAgent",
    SecureTransport = "aws:SecureTransport",
    CurrentTime = "aws:CurrentTime",
    EpochTime = "aws:EpochTime",
    PrincipalType = "aws:principaltype",
    UserId = "aws:userid",
    Username = "aws:username",
    Groups = "aws:groups",
    LdapUser = "ldap:user",
    LdapUsername = "ldap:username",
    LdapGroups = "ldap:groups",
    RequestObjectTag = "s3:RequestObjectTag",
    ExistingObjectTag = "s3:ExistingObjectTag",
    RequestObjectTagKeys = "s3:RequestObjectTagKeys",
    JwtSub = "jwt:sub",
    JwtIss = "jwt:iss",
    JwtAud = "jwt:aud",
    JwtJti = "jwt:jti",
    JwtName = "jwt:name",
    JwtUpn = "jwt:upn",
    JwtGroups = "jwt:groups",
    JwtGivenName = "jwt:given_name",
    JwtFamilyName = "jwt:family_name",
    JwtMiddleName = "jwt:middle_name",
    JwtNickname = "jwt:nickname",
    JwtPreferredUsername = "jwt:preferred_username",
    JwtProfile = "jwt:profile",
    JwtPicture = "jwt:picture",
    JwtWebsite = "jwt:website",
    JwtEmail = "jwt:email",
    JwtGender = "jwt:gender",
    JwtBirthdate = "jwt:birthdate",
    JwtPhoneNumber = "jwt:phone_number",
    JwtAddress = "jwt:address",
    JwtScope = "jwt:scope",
    JwtClientId = "jwt:client_id",
    StsDurationSeconds = "sts:DurationSeconds",
    SvcDurationSeconds = "svc:DurationSeconds",
}

use KeyName as K;

/// The JWT claims MinIO substitutes, in its `JWTKeys` order.
const JWT: &[KeyName] = &[
    K::JwtSub,
    K::JwtIss,
    K::JwtAud,
    K::JwtJti,
    K::JwtName,
    K::JwtUpn,
    K::JwtGroups,
    K::JwtGivenName,
    K::JwtFamilyName,
    K::JwtMiddleName,
    K::JwtNickname,
    K::JwtPreferredUsername,
    K::JwtProfile,
    K::JwtPicture,
    K::JwtWebsite,
    K::JwtEmail,
    K::JwtGender,
    K::JwtBirthdate,
    K::JwtPhoneNumber,
    K::JwtAddress,
    K::JwtScope,
    K::JwtClientId,
];

/// MinIO's `CommonKeys`, in its order: the keys every S3 action accepts
/// and the only ones that policy variables (`${aws:username}`) name. The
/// order matters: MinIO substitutes condition values key by key in it.
pub(crate) const COMMON: [KeyName; 40] = {
    let head = [
        K::SignatureVersion,
        K::AuthType,
        K::SignatureAge,
        K::ContentSha256,
        K::LocationConstraint,
        K::Referer,
        K::SourceIp,
        K::UserAgent,
        K::SecureTransport,
        K::CurrentTime,
        K::EpochTime,
        K::PrincipalType,
        K::UserId,
        K::Username,
        K::Groups,
        K::LdapUser,
        K::LdapUsername,
        K::LdapGroups,
    ];
    let mut out = [K::JwtSub; 40];
    let mut i = 0;
    while i < head.len() {
        out[i] = head[i];
        i += 1;
    }
    let mut j = 0;
    while j < JWT.len() {
        out[head.len() + j] = JWT[j];
        j += 1;
    }
    out
};

/// A set of key names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct KeySet(u64);

impl KeySet {
    pub(crate) const fn of(keys: &[KeyName]) -> KeySet {
        let mut bits = 0u64;
        let mut i = 0;
        while i < keys.len() {
            bits |= 1 << keys[i] as u8;
            i += 1;
        }
        KeySet(bits)
    }

    pub(crate) const fn union(self, other: KeySet) -> KeySet {
        KeySet(self.0 | other.0)
    }

    pub(crate) const fn contains(self, k: KeyName) -> bool {
        self.0 & (1 << k as u8) != 0
    }
}

/// Keys every S3 action accepts.
pub(crate) const COMMON_SET: KeySet = KeySet::of(&COMMON);
/// Every key (what `s3:*` accepts).
pub(crate) const ALL_SET: KeySet = KeySet::of(KeyName::ALL);
/// What admin actions accept (MinIO's `AllSupportedAdminKeys`).
pub(crate) const ADMIN_SET: KeySet = KeySet::of(&[
    K::Referer,
    K::SourceIp,
    K::UserAgent,
    K::SecureTransport,
    K::CurrentTime,
    K::EpochTime,
    K::PrincipalType,
    K::UserId,
    K::Username,
    K::Groups,
    K::LdapUser,
    K::LdapUsername,
    K::LdapGroups,
    K::SvcDurationSeconds,
])
.union(KeySet::of(JWT));
/// What STS actions accept.
pub(crate) const STS_SET: KeySet = KeySet::of(&[K::StsDurationSeconds]);

impl KeyName {
    /// The known name spelled `s`, compared without ASCII case.
    pub(crate) fn find(s: &str) -> Option<KeyName> {
        KeyName::ALL
            .iter()
            .copied()
            .find(|k| k.name().eq_ignore_ascii_case(s))
    }
}

/// A key as a condition uses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CondKey {
    pub(crate) name: KeyName,
    /// What follows the first `/` (a tag key), as written; never empty.
    pub(crate) suffix: Option<String>,
    /// The request's map key: the whole key in lower case.
    pub(crate) lookup: String,
    /// As written (serialised back as is).
    pub(crate) text: String,
}

impl CondKey {
    /// Reads a key as MinIO does: the part before the first `/` must be a
    /// known name; what follows is kept (only the tag keys give it a use).
    pub(crate) fn parse(s: &str) -> Result<CondKey, PolicyError> {
        let (name, suffix) = match s.split_once('/') {
            Some((n, v)) => (n, (!v.is_empty()).then(|| v.to_owned())),
            None => (s, None),
        };
        let name = KeyName::find(name)
            .ok_or_else(|| PolicyError::invalid(format!("invalid condition key '{s}'")))?;
        let mut lookup = name.name().to_ascii_lowercase();
        if let Some(v) = &suffix {
            lookup.push('/');
            lookup.push_str(&v.to_lowercase());
        }
        Ok(CondKey {
            name,
            suffix,
            lookup,
            text: s.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_shape() {
        assert_eq!(KeyName::ALL.len(), 59);
        for (i, k) in KeyName::ALL.iter().enumerate() {
            assert_eq!(*k as usize, i);
        }
        assert_eq!(K::SourceIp.variable(), "${aws:SourceIp}");
        assert_eq!(COMMON[17], K::LdapGroups);
        assert_eq!(COMMON[39], K::JwtClientId);
        assert!(COMMON_SET.contains(K::Username));
        assert!(!COMMON_SET.contains(K::Prefix));
        assert!(ALL_SET.contains(K::SvcDurationSeconds));
        assert!(ADMIN_SET.contains(K::JwtSub));
        assert!(!ADMIN_SET.contains(K::Prefix));
    }

    #[test]
    fn parse_keys() {
        let k = CondKey::parse("AWS:SOURCEIP").unwrap();
        assert_eq!(k.name, K::SourceIp);
        assert_eq!(k.lookup, "aws:sourceip");
        assert_eq!(k.text, "AWS:SOURCEIP");
        let t = CondKey::parse("s3:ExistingObjectTag/Project").unwrap();
        assert_eq!(t.lookup, "s3:existingobjecttag/project");
        let bare = CondKey::parse("s3:ExistingObjectTag/").unwrap();
        assert_eq!(bare.suffix, None);
        assert!(CondKey::parse("aws:nope").is_err());
        assert!(CondKey::parse("").is_err());
    }
}
