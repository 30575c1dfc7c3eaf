//! What the daemon's tests share: the `tessera` binary started and
//! stopped ([`Daemon`], and [`Server`] for the S3 API tests), the one raw
//! HTTP/1.1 client, aws-sdk-s3 clients, and signed raw requests.

mod daemon;
mod http;
mod s3;
mod server;
mod signing;

pub use daemon::{Daemon, PATIENCE, clean_command, drive_dirs, run, tessera, wait_until};
pub use http::{parse_response, raw};
pub use s3::{base64, code, data, get_bytes, md5_hex, metric_value, status};
pub use server::{ACCESS_KEY, SECRET_KEY, Server};
