//! Where GOAT keeps its host state, and the one way each piece of it is
//! opened or written.
//!
//! GOAT's host state is three SQLite files (the store, the permission rules
//! and the plugin registry), a plugin directory and a compiled-code cache,
//! all outside any workspace. The key decision: every database goes through
//! one [`sqlite::open`], with its identity ([`sqlite::DbSpec`]) as data, and
//! every private file through one [`fs::write_private_atomic`]. Before this
//! crate the three databases were opened three ways, only one checked that a
//! file was its own and one could never migrate; the atomic write existed
//! twice and a fix landed in only one copy. One copy of each rule, so a fix
//! reaches every file (cargo shares `util/sqlite.rs` across its databases for
//! the same reason).
//!
//! Where each file is comes from [`paths`], resolved link by link (a
//! dangling symlink included) so callers compare and open where a file
//! really is; directories and files GOAT trusts (the cache, the plugin
//! directory) are checked by [`fs`] to be the user's own and closed to
//! others.
//!
//! Nothing here knows what the files hold: callers pass their migrations.

pub mod fs;
pub mod paths;
pub mod sqlite;
