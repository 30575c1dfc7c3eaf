//! The open-files limit. A shell gives a process a soft limit of 1,024
//! descriptors, far below what a server with thousands of connections and
//! a file per drive per request needs; the hard limit is what the operator
//! (or systemd's `LimitNOFILE`) allows. At start the soft limit is raised
//! to the hard one, as Go's runtime does for MinIO, and half of it is given
//! to client connections: the rest stays for the drives' files, rings and
//! the server's own, so that a crowd of clients cannot starve the drives.

use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

/// The open-files limit before and after [`raise`] (`None`: unlimited).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FdLimit {
    pub before: Option<u64>,
    pub now: Option<u64>,
}

/// Raises the soft open-files limit to the hard limit.
pub fn raise() -> FdLimit {
    let cur = getrlimit(Resource::Nofile);
    let before = cur.current;
    let wanted = match (cur.current, cur.maximum) {
        (Some(soft), Some(hard)) if soft < hard => Some(hard),
        _ => None,
    };
    let Some(hard) = wanted else {
        return FdLimit {
            before,
            now: before,
        };
    };
    let raised = setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(hard),
            maximum: cur.maximum,
        },
    );
    let now = match raised {
        Ok(()) => getrlimit(Resource::Nofile).current,
        Err(e) => {
            tracing::warn!(soft = ?before, hard, "could not raise the open-files limit: {e}");
            before
        }
    };
    FdLimit { before, now }
}

/// Fewest connections served at once, whatever the limit.
const MIN_CONNECTIONS: usize = 16;
/// Most (beyond it the kernel and memory bound them first).
const MAX_CONNECTIONS: usize = 1 << 20;

/// Client connections served at once for an open-files limit: half of it.
pub fn connections_for(limit: Option<u64>) -> usize {
    match limit {
        None => MAX_CONNECTIONS,
        Some(n) => usize::try_from(n / 2)
            .unwrap_or(MAX_CONNECTIONS)
            .clamp(MIN_CONNECTIONS, MAX_CONNECTIONS),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_the_descriptors_go_to_connections() {
        assert_eq!(connections_for(Some(1024)), 512);
        assert_eq!(connections_for(Some(1_048_576)), 524_288);
        assert_eq!(connections_for(Some(20)), MIN_CONNECTIONS);
        assert_eq!(connections_for(Some(u64::MAX)), MAX_CONNECTIONS);
        assert_eq!(connections_for(None), MAX_CONNECTIONS);
    }

    #[test]
    fn the_soft_limit_is_raised_to_the_hard_one() {
        let l = raise();
        let after = getrlimit(Resource::Nofile);
        assert_eq!(l.now, after.current);
        if let (Some(soft), Some(hard)) = (after.current, after.maximum) {
            assert_eq!(soft, hard);
        }
        // Raising again changes nothing.
        let again = raise();
        assert_eq!(again.before, again.now);
        assert_eq!(again.now, l.now);
    }
}
