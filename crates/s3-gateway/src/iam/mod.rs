//! Identities and their policies: users, groups, named policies and which
//! are attached to whom, kept in memory for the verifier and the
//! authoriser and stored under `.minio.sys/config/iam/` in MinIO's format
//! ([`store`]).
//!
//! Every change is written to the drives first, then this node's view is
//! reloaded from them, then the change is announced through the object
//! layer's bucket hook (in a cluster: ordered through raft, and every node
//! that answers reloads before the call returns). Reads are lock-free
//! snapshots ([`Iam::snapshot`]): a request sees one consistent view.

mod crypt;
pub mod store;
pub mod svcacct;
pub mod temp;
pub mod token;
pub mod webid;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};

use object::layer::{ConfigWatcher, ObjectLayer};
use policy::Policy;

use crate::auth::{Credentials, CredentialsProvider, Principal, StaticCredentials};
use store::{
    GroupInfo, MappedPolicy, PolicyDoc, StoredCredentials, UserIdentity, group_path,
    group_policy_path, policy_path, user_path, user_policy_path,
};

/// Most users, groups or policies kept (each); beyond, creation is
/// refused.
pub const MAX_ENTRIES: usize = 50_000;
/// Most members of one group.
pub const MAX_GROUP_MEMBERS: usize = 10_000;
/// Most policies attached to one user or group.
pub const MAX_ATTACHED: usize = 64;

/// What went wrong with an IAM call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IamError {
    /// No such user (`XMinioAdminNoSuchUser`).
    NoSuchUser(String),
    /// No such group (`XMinioAdminNoSuchGroup`).
    NoSuchGroup(String),
    /// No such policy (`XMinioAdminNoSuchPolicy`).
    NoSuchPolicy(String),
    /// A name, key or document that is not acceptable
    /// (`XMinioAdminInvalidArgument` and kin), with why.
    Invalid(String),
    /// The group has members and cannot be removed
    /// (`XMinioAdminGroupNotEmpty`).
    GroupNotEmpty(String),
    /// No such service account (`XMinioInvalidIAMCredentials`, 404).
    NoSuchServiceAccount(String),
    /// A service account that cannot be made so
    /// (`XMinioIAMServiceAccountNotAllowed`), with why.
    NotAllowed(String),
    /// A service account's policy beyond its bound
    /// (`XMinioIAMServiceAccountSessionPolicyTooLarge`).
    PolicyTooLarge,
    /// The drives could not be read or written.
    Storage(String),
}

impl std::fmt::Display for IamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IamError::NoSuchUser(u) => write!(f, "the user {u} does not exist"),
            IamError::NoSuchGroup(g) => write!(f, "the group {g} does not exist"),
            IamError::NoSuchPolicy(p) => write!(f, "the policy {p} does not exist"),
            IamError::Invalid(m) => f.write_str(m),
            IamError::GroupNotEmpty(g) => write!(f, "the group {g} is not empty"),
            IamError::NoSuchServiceAccount(a) => {
                write!(f, "the service account {a} is not found")
            }
            IamError::NotAllowed(m) => f.write_str(m),
            IamError::PolicyTooLarge => write!(
                f,
                "the service account's policy is larger than {} bytes",
                svcacct::MAX_POLICY
            ),
            IamError::Storage(m) => write!(f, "IAM storage: {m}"),
        }
    }
}

impl From<object::layer::Error> for IamError {
    fn from(e: object::layer::Error) -> Self {
        IamError::Storage(e.to_string())
    }
}

/// A user made with an access key and a secret key.
#[derive(Debug, Clone)]
pub struct User {
    pub secret_key: String,
    pub enabled: bool,
    pub updated_at: String,
}

/// A group: members (access keys) and whether it is enabled.
#[derive(Debug, Clone)]
pub struct Group {
    pub members: Vec<String>,
    pub enabled: bool,
    pub updated_at: String,
}

/// A named policy.
#[derive(Debug, Clone)]
pub struct NamedPolicy {
    /// The document (MinIO's `PolicyDoc`).
    pub doc: PolicyDoc,
    /// Parsed once.
    pub compiled: Arc<Policy>,
    /// One of MinIO's built-in policies (not stored, cannot be removed).
    pub builtin: bool,
}

/// One consistent view of every identity and policy.
#[derive(Debug, Default)]
pub struct IamState {
    /// The reload that read it (0: nothing read yet).
    pub generation: u64,
    pub users: BTreeMap<String, User>,
    pub groups: BTreeMap<String, Group>,
    pub policies: BTreeMap<String, NamedPolicy>,
    /// Policies attached to users (access key -> names).
    pub user_policies: HashMap<String, Vec<String>>,
    /// Policies attached to groups.
    pub group_policies: HashMap<String, Vec<String>>,
    /// Groups each user is a member of (from the groups' member lists).
    pub member_of: HashMap<String, Vec<String>>,
    /// The identity of every enabled user, resolved once per view: a
    /// request takes its user's with one lookup.
    pub identities: HashMap<String, Arc<Identity>>,
    /// Policies of web identities' temporary credentials, by parent.
    pub sts_policies: HashMap<String, Vec<String>>,
    /// Live temporary credentials (STS), by access key.
    pub temps: HashMap<String, Arc<temp::TempCred>>,
    /// The identity of each temporary credential whose parent is enabled.
    pub temp_identities: HashMap<String, Arc<Identity>>,
    /// Service accounts, by access key.
    pub svcaccts: HashMap<String, Arc<svcacct::SvcAccount>>,
    /// The identity of each enabled service account whose parent is
    /// enabled.
    pub svc_identities: HashMap<String, Arc<Identity>>,
}

/// The identity of a signed request that is not the root user's: its
/// name, its enabled groups, and every policy that applies (its own and
/// its enabled groups', compiled).
#[derive(Debug, Clone)]
pub struct Identity {
    pub name: String,
    /// `arn:aws:iam:::user/<name>`, which bucket policies name.
    pub arn: String,
    pub groups: Vec<String>,
    pub policies: Vec<Arc<Policy>>,
    /// The session policy of temporary credentials: what it does not
    /// allow is refused whatever the other policies say.
    pub session_policy: Option<Arc<Policy>>,
    /// Temporary credentials of the root user: allowed everything the
    /// session policy allows.
    pub root_parent: bool,
    /// Temporary credentials (which cannot make more).
    pub temporary: bool,
    /// A service account (acting as its parent, `name`).
    pub service: bool,
}

impl IamState {
    /// The identity of user `access_key`, if it exists and is enabled.
    pub fn identity(&self, access_key: &str) -> Option<Identity> {
        let user = self.users.get(access_key)?;
        if !user.enabled {
            return None;
        }
        let groups: Vec<String> = self
            .member_of
            .get(access_key)
            .into_iter()
            .flatten()
            .filter(|g| self.groups.get(*g).is_some_and(|g| g.enabled))
            .cloned()
            .collect();
        let mut names: Vec<&String> = self
            .user_policies
            .get(access_key)
            .into_iter()
            .flatten()
            .collect();
        for g in &groups {
            names.extend(self.group_policies.get(g).into_iter().flatten());
        }
        let mut policies = Vec::new();
        for n in names {
            if let Some(p) = self.policies.get(n) {
                policies.push(Arc::clone(&p.compiled));
            }
        }
        Some(Identity {
            name: access_key.to_owned(),
            arn: format!("arn:aws:iam:::user/{access_key}"),
            groups,
            policies,
            session_policy: None,
            root_parent: false,
            temporary: false,
            service: false,
        })
    }
}

/// The identities of a gateway.
pub struct Iam {
    layer: Arc<ObjectLayer>,
    root: StaticCredentials,
    root_key: String,
    state: RwLock<Arc<IamState>>,
    /// Changes made through this node, one at a time.
    changes: tokio::sync::Mutex<()>,
    /// Tickets of reloads: a view is installed only over an older one.
    reloads: std::sync::atomic::AtomicU64,
    /// The shortest STS session granted, seconds (MinIO's 900 unless a
    /// test shortens it).
    sts_min_duration: std::sync::atomic::AtomicU64,
    /// The KMS documents are sealed with at rest, as MinIO seals them.
    kms: crypt::DocKms,
}

impl std::fmt::Debug for Iam {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Iam")
            .field("root", &self.root_key)
            .finish_non_exhaustive()
    }
}

fn builtin_policies() -> BTreeMap<String, NamedPolicy> {
    let mut out = BTreeMap::new();
    for (name, doc) in policy::builtin::ALL {
        let compiled = Policy::parse_iam(doc.as_bytes()).expect("built-in policies parse");
        let value: serde_json::Value =
            serde_json::from_str(doc).expect("built-in policies are JSON");
        out.insert(
            (*name).to_owned(),
            NamedPolicy {
                doc: PolicyDoc {
                    version: 1,
                    policy: value,
                    create_date: store::GO_ZERO.to_owned(),
                    update_date: store::GO_ZERO.to_owned(),
                },
                compiled: Arc::new(compiled),
                builtin: true,
            },
        );
    }
    out
}

/// Whether `name` can be a user's access key, a group or a policy name as
/// MinIO allows them (and as a path segment holds them).
fn check_name(kind: &str, name: &str, min: usize, max: usize) -> Result<(), IamError> {
    let ok = (min..=max).contains(&name.len())
        && !name.contains(['/', '\\', ',', '=', '\0'])
        && name != "."
        && name != ".."
        && !name.chars().any(char::is_control);
    if ok {
        Ok(())
    } else {
        Err(IamError::Invalid(format!(
            "{kind} '{name}' is not valid: {min} to {max} characters, none of / \\ , = or control characters"
        )))
    }
}

impl Iam {
    /// The identities of `layer`'s drives, with the root user of `root`
    /// (access key, secret key pairs), whose requests are never checked
    /// against policies. Holds the root user and the built-in policies
    /// until [`reload`](Self::reload) reads the stored documents; follows
    /// the changes other nodes announce. With `kms`, documents are sealed
    /// at rest as MinIO with a KMS seals them.
    pub fn new(
        layer: Arc<ObjectLayer>,
        root: &[(String, String)],
        kms: Option<Arc<dyn sse::kms::Kms>>,
    ) -> Arc<Iam> {
        let iam = Arc::new(Iam {
            layer,
            root: crate::service::static_credentials(root),
            root_key: root.first().map(|(a, _)| a.clone()).unwrap_or_default(),
            state: RwLock::new(Arc::new(IamState {
                policies: builtin_policies(),
                ..IamState::default()
            })),
            changes: tokio::sync::Mutex::new(()),
            reloads: std::sync::atomic::AtomicU64::new(0),
            sts_min_duration: std::sync::atomic::AtomicU64::new(temp::MIN_DURATION),
            kms,
        });
        let weak = Arc::downgrade(&iam);
        iam.layer.watch_config(ConfigWatcher(Arc::new(move || {
            let weak = weak.clone();
            Box::pin(async move {
                let Some(iam) = weak.upgrade() else { return };
                if let Err(e) = iam.reload().await {
                    tracing::warn!("IAM reload after another node's change: {e}");
                }
            })
        })));
        iam
    }

    /// Sets the shortest STS session granted (seconds, at least 1): for
    /// tests of expiry, which cannot wait MinIO's 15 minutes.
    pub fn set_sts_min_duration(&self, secs: u64) {
        self.sts_min_duration
            .store(secs.max(1), std::sync::atomic::Ordering::Relaxed);
    }

    /// The shortest STS session granted, seconds.
    pub fn sts_min_duration(&self) -> u64 {
        self.sts_min_duration
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The current view.
    pub fn snapshot(&self) -> Arc<IamState> {
        Arc::clone(&self.state.read().unwrap_or_else(|p| p.into_inner()))
    }

    /// Whether `access_key` is the root user's.
    pub fn is_root(&self, access_key: &str) -> bool {
        self.root.contains(access_key)
    }

    /// The secret key of root access key `access_key`.
    pub(crate) fn root_secret(&self, access_key: &str) -> Option<String> {
        self.root
            .lookup(access_key)
            .map(|c| c.secret_key.expose().to_owned())
    }

    /// The root user's access key.
    pub fn root_key(&self) -> &str {
        &self.root_key
    }

    /// Reads every IAM document from the drives into a new view.
    pub async fn reload(&self) -> Result<(), IamError> {
        let ticket = self
            .reloads
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            + 1;
        let mut st = IamState {
            generation: ticket,
            policies: builtin_policies(),
            ..IamState::default()
        };
        for name in self.names(store::USERS_PREFIX, "/identity.json").await? {
            let Some(doc) = self.read_json::<UserIdentity>(&user_path(&name)).await? else {
                continue;
            };
            let c = doc.credentials;
            st.users.insert(
                name,
                User {
                    secret_key: c.secret_key,
                    enabled: c.status != "off" && c.status != "disabled",
                    updated_at: doc.updated_at,
                },
            );
        }
        for name in self.names(store::GROUPS_PREFIX, "/members.json").await? {
            let Some(g) = self.read_json::<GroupInfo>(&group_path(&name)).await? else {
                continue;
            };
            for m in &g.members {
                st.member_of
                    .entry(m.clone())
                    .or_default()
                    .push(name.clone());
            }
            st.groups.insert(
                name,
                Group {
                    members: g.members,
                    enabled: g.status != "disabled",
                    updated_at: g.updated_at,
                },
            );
        }
        for name in self.names(store::POLICIES_PREFIX, "/policy.json").await? {
            let Some(bytes) = self.read_doc(&policy_path(&name)).await? else {
                continue;
            };
            let doc = match store::parse_policy_doc(&bytes) {
                Ok(d) => d,
                Err(e) => {
                    tracing::warn!(policy = %name, "IAM: stored policy is not JSON: {e}");
                    continue;
                }
            };
            let text = serde_json::to_vec(&doc.policy).unwrap_or_default();
            match Policy::parse_iam(&text) {
                Ok(p) => {
                    st.policies.insert(
                        name,
                        NamedPolicy {
                            doc,
                            compiled: Arc::new(p),
                            builtin: false,
                        },
                    );
                }
                Err(e) => tracing::warn!(policy = %name, "IAM: stored policy refused: {e}"),
            }
        }
        for name in self.names(store::USER_POLICY_PREFIX, ".json").await? {
            if let Some(m) = self
                .read_json::<MappedPolicy>(&user_policy_path(&name))
                .await?
            {
                st.user_policies.insert(name, m.names());
            }
        }
        for name in self.names(store::GROUP_POLICY_PREFIX, ".json").await? {
            if let Some(m) = self
                .read_json::<MappedPolicy>(&group_policy_path(&name))
                .await?
            {
                st.group_policies.insert(name, m.names());
            }
        }
        for name in self.names(store::STS_POLICY_PREFIX, ".json").await? {
            if let Some(m) = self
                .read_json::<MappedPolicy>(&store::sts_policy_path(&name))
                .await?
            {
                st.sts_policies.insert(name, m.names());
            }
        }
        let names: Vec<String> = st.users.keys().cloned().collect();
        for name in names {
            if let Some(id) = st.identity(&name) {
                st.identities.insert(name, Arc::new(id));
            }
        }
        self.load_temps(&mut st).await?;
        self.load_svcaccts(&mut st).await?;
        // A reload that began later read the drives later: its view wins.
        let mut cur = self.state.write().unwrap_or_else(|p| p.into_inner());
        if cur.generation < ticket {
            *cur = Arc::new(st);
        }
        Ok(())
    }

    /// The entries under `prefix` whose document path ends with `suffix`
    /// (`alice` of `users/alice/identity.json`).
    async fn names(&self, prefix: &str, suffix: &str) -> Result<Vec<String>, IamError> {
        let mut out: Vec<String> = self
            .layer
            .list_config(prefix)
            .await?
            .into_iter()
            .filter_map(|p| p.strip_suffix(suffix).map(str::to_owned))
            .filter(|n| !n.is_empty() && !n.contains('/'))
            .collect();
        out.truncate(MAX_ENTRIES);
        Ok(out)
    }

    async fn read_json<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
    ) -> Result<Option<T>, IamError> {
        let Some(bytes) = self.read_doc(path).await? else {
            return Ok(None);
        };
        match serde_json::from_slice(&bytes) {
            Ok(v) => Ok(Some(v)),
            Err(e) => {
                tracing::warn!(%path, "IAM document skipped: {e}");
                Ok(None)
            }
        }
    }

    async fn write_json<T: serde::Serialize>(&self, path: &str, v: &T) -> Result<(), IamError> {
        let bytes = serde_json::to_vec(v).map_err(|e| IamError::Storage(e.to_string()))?;
        let bytes = self.seal_doc(path, bytes)?;
        self.layer.write_config(path, &bytes).await?;
        Ok(())
    }

    /// After a change on the drives: this node's view, then every node's.
    async fn publish(&self) -> Result<(), IamError> {
        if self.layer.read_config(store::FORMAT_PATH).await?.is_none() {
            self.write_json(store::FORMAT_PATH, &store::Format { version: 1 })
                .await?;
        }
        self.reload().await?;
        self.layer.announce_config_change().await;
        Ok(())
    }

    /// Creates user `access_key` or changes its secret key and status.
    pub async fn set_user(
        &self,
        access_key: &str,
        secret_key: &str,
        enabled: bool,
    ) -> Result<(), IamError> {
        check_name("access key", access_key, 3, 128)?;
        if self.is_root(access_key) {
            return Err(IamError::Invalid(
                "the root user's access key cannot be a user's".into(),
            ));
        }
        svcacct::check_secret(secret_key)?;
        let _g = self.changes.lock().await;
        let st = self.snapshot();
        if st.svcaccts.contains_key(access_key) || st.temps.contains_key(access_key) {
            return Err(IamError::NotAllowed(format!(
                "{access_key} is the access key of a service account or of temporary credentials"
            )));
        }
        if !st.users.contains_key(access_key) && st.users.len() >= MAX_ENTRIES {
            return Err(IamError::Invalid(format!("more than {MAX_ENTRIES} users")));
        }
        let doc = UserIdentity {
            version: 1,
            credentials: StoredCredentials {
                access_key: access_key.to_owned(),
                secret_key: secret_key.to_owned(),
                status: if enabled { "on" } else { "off" }.to_owned(),
                expiration: store::NEVER.to_owned(),
                ..StoredCredentials::default()
            },
            updated_at: store::now_rfc3339(),
        };
        self.write_json(&user_path(access_key), &doc).await?;
        self.publish().await
    }

    /// Enables or disables user `access_key`.
    pub async fn set_user_status(&self, access_key: &str, enabled: bool) -> Result<(), IamError> {
        let user = self
            .snapshot()
            .users
            .get(access_key)
            .cloned()
            .ok_or_else(|| IamError::NoSuchUser(access_key.to_owned()))?;
        self.set_user(access_key, &user.secret_key, enabled).await
    }

    /// Removes user `access_key`, its attachments and its group
    /// memberships.
    pub async fn remove_user(&self, access_key: &str) -> Result<(), IamError> {
        let _g = self.changes.lock().await;
        let st = self.snapshot();
        if !st.users.contains_key(access_key) {
            return Err(IamError::NoSuchUser(access_key.to_owned()));
        }
        for g in st.member_of.get(access_key).into_iter().flatten() {
            if let Some(group) = st.groups.get(g) {
                let members: Vec<String> = group
                    .members
                    .iter()
                    .filter(|m| *m != access_key)
                    .cloned()
                    .collect();
                self.write_group(g, members, group.enabled).await?;
            }
        }
        // Its temporary credentials go with it (a user made again with
        // the same name does not inherit them).
        for (ak, t) in &st.temps {
            if t.parent == access_key {
                self.layer.delete_config(&store::sts_path(ak)).await?;
            }
        }
        // So do its service accounts.
        for (ak, s) in &st.svcaccts {
            if s.parent == access_key {
                self.layer.delete_config(&store::svc_path(ak)).await?;
            }
        }
        self.layer
            .delete_config(&user_policy_path(access_key))
            .await?;
        self.layer.delete_config(&user_path(access_key)).await?;
        self.publish().await
    }

    async fn write_group(
        &self,
        group: &str,
        members: Vec<String>,
        enabled: bool,
    ) -> Result<(), IamError> {
        let doc = GroupInfo {
            version: 1,
            status: if enabled { "enabled" } else { "disabled" }.to_owned(),
            members,
            updated_at: store::now_rfc3339(),
        };
        self.write_json(&group_path(group), &doc).await
    }

    /// Adds `members` to `group` (made if new), or with `remove`, takes
    /// them out; removing no members removes the group itself, which must
    /// then be empty.
    pub async fn update_group(
        &self,
        group: &str,
        members: &[String],
        remove: bool,
    ) -> Result<(), IamError> {
        check_name("group", group, 1, 256)?;
        let _g = self.changes.lock().await;
        let st = self.snapshot();
        for m in members {
            if !st.users.contains_key(m) {
                return Err(IamError::NoSuchUser(m.clone()));
            }
        }
        let existing = st.groups.get(group);
        if remove {
            let Some(existing) = existing else {
                return Err(IamError::NoSuchGroup(group.to_owned()));
            };
            if members.is_empty() {
                if !existing.members.is_empty() {
                    return Err(IamError::GroupNotEmpty(group.to_owned()));
                }
                self.layer.delete_config(&group_policy_path(group)).await?;
                self.layer.delete_config(&group_path(group)).await?;
            } else {
                let kept: Vec<String> = existing
                    .members
                    .iter()
                    .filter(|m| !members.contains(m))
                    .cloned()
                    .collect();
                self.write_group(group, kept, existing.enabled).await?;
            }
        } else {
            if existing.is_none() && st.groups.len() >= MAX_ENTRIES {
                return Err(IamError::Invalid(format!("more than {MAX_ENTRIES} groups")));
            }
            let mut all = existing.map(|g| g.members.clone()).unwrap_or_default();
            for m in members {
                if !all.contains(m) {
                    all.push(m.clone());
                }
            }
            if all.len() > MAX_GROUP_MEMBERS {
                return Err(IamError::Invalid(format!(
                    "a group has at most {MAX_GROUP_MEMBERS} members"
                )));
            }
            self.write_group(group, all, existing.is_none_or(|g| g.enabled))
                .await?;
        }
        self.publish().await
    }

    /// Enables or disables `group`.
    pub async fn set_group_status(&self, group: &str, enabled: bool) -> Result<(), IamError> {
        let _g = self.changes.lock().await;
        let g = self
            .snapshot()
            .groups
            .get(group)
            .cloned()
            .ok_or_else(|| IamError::NoSuchGroup(group.to_owned()))?;
        self.write_group(group, g.members, enabled).await?;
        self.publish().await
    }

    /// Creates or replaces policy `name` with the JSON `document`.
    pub async fn set_policy(&self, name: &str, document: &[u8]) -> Result<(), IamError> {
        check_name("policy name", name, 1, 128)?;
        Policy::parse_iam(document).map_err(|e| IamError::Invalid(e.to_string()))?;
        let value: serde_json::Value =
            serde_json::from_slice(document).map_err(|e| IamError::Invalid(e.to_string()))?;
        let _g = self.changes.lock().await;
        let st = self.snapshot();
        if st.policies.get(name).is_some_and(|p| p.builtin) {
            return Err(IamError::Invalid(format!(
                "{name} is a built-in policy and cannot be replaced"
            )));
        }
        if !st.policies.contains_key(name) && st.policies.len() >= MAX_ENTRIES {
            return Err(IamError::Invalid(format!(
                "more than {MAX_ENTRIES} policies"
            )));
        }
        let now = store::now_rfc3339();
        let create_date = st
            .policies
            .get(name)
            .map(|p| p.doc.create_date.clone())
            .filter(|d| d != store::GO_ZERO)
            .unwrap_or_else(|| now.clone());
        let doc = PolicyDoc {
            version: 1,
            policy: value,
            create_date,
            update_date: now,
        };
        self.write_json(&policy_path(name), &doc).await?;
        self.publish().await
    }

    /// Removes policy `name`, and its attachments.
    pub async fn remove_policy(&self, name: &str) -> Result<(), IamError> {
        let _g = self.changes.lock().await;
        let st = self.snapshot();
        match st.policies.get(name) {
            None => return Err(IamError::NoSuchPolicy(name.to_owned())),
            Some(p) if p.builtin => {
                return Err(IamError::Invalid(format!(
                    "{name} is a built-in policy and cannot be removed"
                )));
            }
            Some(_) => {}
        }
        for (user, names) in &st.user_policies {
            if names.iter().any(|n| n == name) {
                let kept: Vec<String> = names.iter().filter(|n| *n != name).cloned().collect();
                self.write_mapping(&user_policy_path(user), &kept).await?;
            }
        }
        for (group, names) in &st.group_policies {
            if names.iter().any(|n| n == name) {
                let kept: Vec<String> = names.iter().filter(|n| *n != name).cloned().collect();
                self.write_mapping(&group_policy_path(group), &kept).await?;
            }
        }
        self.layer.delete_config(&policy_path(name)).await?;
        self.publish().await
    }

    async fn write_mapping(&self, path: &str, names: &[String]) -> Result<(), IamError> {
        if names.is_empty() {
            self.layer.delete_config(path).await?;
            return Ok(());
        }
        let doc = MappedPolicy {
            // What current MinIO writes (it never reads the field).
            version: 0,
            policies: names.join(","),
            updated_at: store::now_rfc3339(),
        };
        self.write_json(path, &doc).await
    }

    /// Attaches (or with `detach`, detaches) `policies` to user or group
    /// `name`; returns the policies attached afterwards.
    pub async fn attach(
        &self,
        name: &str,
        group: bool,
        policies: &[String],
        detach: bool,
    ) -> Result<Vec<String>, IamError> {
        let _g = self.changes.lock().await;
        let st = self.snapshot();
        if group && !st.groups.contains_key(name) {
            return Err(IamError::NoSuchGroup(name.to_owned()));
        }
        if !group && !st.users.contains_key(name) {
            return Err(IamError::NoSuchUser(name.to_owned()));
        }
        for p in policies {
            if !st.policies.contains_key(p) {
                return Err(IamError::NoSuchPolicy(p.clone()));
            }
        }
        let current = if group {
            st.group_policies.get(name)
        } else {
            st.user_policies.get(name)
        }
        .cloned()
        .unwrap_or_default();
        let next: Vec<String> = if detach {
            for p in policies {
                if !current.contains(p) {
                    return Err(IamError::Invalid(format!(
                        "the policy {p} is not attached to {name}"
                    )));
                }
            }
            current
                .iter()
                .filter(|p| !policies.contains(p))
                .cloned()
                .collect()
        } else {
            let mut all = current.clone();
            for p in policies {
                if !all.contains(p) {
                    all.push(p.clone());
                }
            }
            all
        };
        if next.len() > MAX_ATTACHED {
            return Err(IamError::Invalid(format!(
                "at most {MAX_ATTACHED} policies are attached to one user or group"
            )));
        }
        let path = if group {
            group_policy_path(name)
        } else {
            user_policy_path(name)
        };
        self.write_mapping(&path, &next).await?;
        self.publish().await?;
        Ok(next)
    }

    /// Replaces the policies attached to user or group `name` (MinIO's
    /// older `set-user-or-group-policy`).
    pub async fn set_attached(
        &self,
        name: &str,
        group: bool,
        policies: &[String],
    ) -> Result<(), IamError> {
        let current = {
            let st = self.snapshot();
            if group {
                st.group_policies.get(name).cloned()
            } else {
                st.user_policies.get(name).cloned()
            }
            .unwrap_or_default()
        };
        if !current.is_empty() {
            self.attach(name, group, &current, true).await?;
        }
        if !policies.is_empty() {
            self.attach(name, group, policies, false).await?;
        }
        Ok(())
    }
}

/// The credentials a gateway verifies signatures with: the root user's,
/// then the enabled users', then the live temporary credentials of
/// enabled parents (with their session token), then the enabled service
/// accounts of enabled parents (expired ones too: the authoriser tells
/// their caller the key expired).
pub(crate) struct GatewayCredentials {
    pub iam: Arc<Iam>,
}

impl CredentialsProvider for GatewayCredentials {
    fn lookup(&self, access_key: &str) -> Option<Credentials> {
        if let Some(c) = self.iam.root.lookup(access_key) {
            return Some(c);
        }
        let st = self.iam.snapshot();
        if let Some(u) = st.users.get(access_key).filter(|u| u.enabled) {
            return Some(Credentials::new(
                u.secret_key.clone(),
                Principal::new(access_key.to_owned()),
            ));
        }
        if let Some(s) = st
            .svcaccts
            .get(access_key)
            .filter(|_| st.svc_identities.contains_key(access_key))
        {
            return Some(Credentials::new(
                s.secret_key.clone(),
                Principal::new(s.parent.clone()),
            ));
        }
        // An expired credential is unknown from its expiry on; the
        // service tells the client its token expired (see `sts`).
        let t = st
            .temps
            .get(access_key)
            .filter(|t| !t.expired_at(temp::unix_now()))
            .filter(|_| st.temp_identities.contains_key(access_key))?;
        Some(
            Credentials::new(t.secret_key.clone(), Principal::new(t.parent.clone()))
                .with_session_token(t.session_token.clone()),
        )
    }
}
