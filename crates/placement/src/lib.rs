//! Where data goes, computed exactly as MinIO computes it, so that Tessera can
//! take over an existing MinIO deployment in place.
//!
//! * [`parse_endpoints`]: `minio server` drive arguments, with MinIO's
//!   ellipsis syntax (`http://node{1...4}:9000/mnt/disk{01...16}`), into a
//!   [`Topology`] of pools of drives, validated.
//! * [`Topology::layout`]: each pool cut into erasure sets of 2 to 16 drives,
//!   with MinIO's choice of set size and drive order: a [`Layout`] of pools,
//!   [`ErasureSet`]s and [`Drive`]s.
//! * [`default_parity`], [`StorageClass`] (`EC:n`), [`StorageClassConfig`],
//!   [`Quorum`]: how many shards are parity, and how many drives must answer.
//! * [`set_index_for`], [`hash_order`], [`object_placement`]: which set of a
//!   pool holds an object (SipHash-2-4 keyed by the deployment id, or the
//!   legacy CRC), and which drive of the set holds which shard.
//! * [`choose_pool`]: which pool a new object goes to, weighted by free space
//!   with the random draw taken as an argument.
//!
//! Everything here is pure: no I/O, no clock, no environment, no randomness of
//! its own. What MinIO reads from its surroundings (the working directory, the
//! server port, `MINIO_ERASURE_SET_DRIVE_COUNT`, `MINIO_STORAGE_CLASS_*`,
//! which hosts are this machine, free space, a random number) is an argument.
//!
//! Each module's documentation ([`ellipses`], [`endpoint`], [`topology`],
//! [`layout`], [`parity`], [`hashing`], [`pool`]) states the MinIO rules it
//! follows, with the MinIO source files they were read in, and where it
//! deliberately refuses inputs that MinIO accepts. Every item is also
//! re-exported at the crate root.
//!
//! # Example
//!
//! ```
//! use placement::{DistributionAlgo, object_placement, parse_endpoints};
//!
//! // Four nodes with eight drives each: 32 drives, two sets of 16.
//! let topology = parse_endpoints(&["http://node{1...4}:9000/mnt/disk{1...8}"])?;
//! let layout = topology.layout(None)?;
//! let pool = &layout.pools()[0];
//! assert_eq!((pool.sets().len(), pool.set_drive_count()), (2, 16));
//!
//! // Consecutive drives of a set are on different nodes.
//! let set0: Vec<&str> = pool.sets()[0].drives().iter().map(|d| d.endpoint().as_str()).collect();
//! assert_eq!(set0[..5], [
//!     "http://node1:9000/mnt/disk1",
//!     "http://node2:9000/mnt/disk1",
//!     "http://node3:9000/mnt/disk1",
//!     "http://node4:9000/mnt/disk1",
//!     "http://node1:9000/mnt/disk2",
//! ]);
//!
//! // Default parity for 16-drive sets is 4: 12 data shards, quorum 12.
//! let classes = layout.storage_class_config(None, None)?;
//! let params = classes.erasure_params("STANDARD", pool.set_drive_count())?;
//! assert_eq!((params.data, params.parity, params.quorum().write), (12, 4, 12));
//!
//! // An object's set and shard order, keyed by format.json's deployment id.
//! let id = uuid::Uuid::parse_str("f5c7b9d0-6a0e-4d5c-9b8e-0a1b2c3d4e5f").unwrap();
//! let placed = object_placement(
//!     "photos", "2024/01/img_0001.jpg", &id,
//!     pool.sets().len(), pool.set_drive_count(), DistributionAlgo::CURRENT,
//! )?;
//! assert!(placed.set_index < 2);
//! assert_eq!(placed.distribution.len(), 16);
//! # Ok::<(), placement::Error>(())
//! ```

#![warn(missing_docs)]

pub mod ellipses;
pub mod endpoint;
mod error;
pub mod hashing;
pub mod layout;
pub mod parity;
pub mod pool;
pub mod topology;

pub use ellipses::{EllipsisPattern, EllipsisRange, MAX_DRIVES_PER_ARG, expand, has_ellipses};
pub use endpoint::{Endpoint, Scheme, clean_path, is_host_ip};
pub use error::Error;
pub use hashing::{
    DIR_OBJECT_SUFFIX, DistributionAlgo, ObjectPlacement, crc32_ieee, distribution_key,
    drives_by_shard, hash_order, hash_order_into, object_placement, set_index_for, set_key,
    sip_hash64,
};
pub use layout::{
    Drive, ErasureSet, Layout, MAX_SET_DRIVE_COUNT, MIN_SET_DRIVE_COUNT, PoolLayout,
    choose_set_drive_count,
};
pub use parity::{
    DEFAULT_RRS_PARITY, ErasureParams, Quorum, StorageClass, StorageClassConfig, StorageClassName,
    default_parity, validate_parity,
};
pub use pool::{
    DISK_FILL_FRACTION, DriveSpace, MAX_USED_PERCENT, MIN_FREE_INODES, PoolCandidate, PoolChoice,
    UNKNOWN_SIZE_ASSUMED_BYTES, choose_pool, has_space_for, pool_weights,
};
pub use topology::{
    DeploymentStyle, ParseOptions, PoolSpec, Topology, parse_endpoints, parse_endpoints_with,
};
