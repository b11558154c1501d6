//! The MCP servers a session offers (ADR-0086): the ones the person
//! trusted, each held to the rule every contained process's readable
//! directories meet, through one hub.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::config::Settings;
use crate::{Notes, paths};

/// ADR-0086: the MCP servers the person trusted, offered through one
/// hub, contained as commands are (in a view only); `None`, with a note
/// saying why, where there are none or none can be contained.
pub fn mcp_servers(
    settings: &Settings,
    workspace: &Path,
    host_files: &[&Path],
    db: Option<&Path>,
    notes: Notes<'_>,
) -> anyhow::Result<Option<Arc<dyn goat_router::ExternalTools>>> {
    let file = paths::mcp_file(db)?;
    let registry = goat_mcp_client::Registry::load(&file)?;
    for server in registry.servers.iter().filter(|s| s.trusted.is_none()) {
        notes(&format!(
            "the MCP server '{}' is not offered: it is not trusted yet (goat mcp trust {})",
            server.name, server.name
        ));
    }
    if registry.servers.iter().all(|s| s.trusted.is_none()) {
        return Ok(None);
    }
    // A plugin of the same name would share its tools' names: the plugin
    // keeps them, and the server is left out, said.
    let plugins = paths::plugin_dir(db)?.into_resolved();
    let plugin_names: Vec<String> = goat_catalog::Registry::open_read_only(&plugins)?
        .map(|r| r.all())
        .transpose()?
        .unwrap_or_default()
        .into_iter()
        .map(|a| a.name)
        .collect();
    let mut servers = registry.servers;
    servers.retain(|s| {
        let clash = plugin_names.contains(&s.name);
        if clash {
            notes(&format!(
                "the MCP server '{}' is not offered: a plugin has the same name (rename one)",
                s.name
            ));
        }
        !clash
    });
    // A server whose --read reaches GOAT's own files is left out, by the
    // rule commands.read_paths is held to (`mcp add` refuses it already; a
    // store moved since, or an edited mcp.json, meets it here).
    servers.retain(|s| match server_reads(&s.name, &s.read, host_files) {
        Ok(()) => true,
        Err(why) => {
            notes(&format!(
                "the MCP server '{}' is not offered: {why:#}",
                s.name
            ));
            false
        }
    });
    let containment = settings.command_containment(workspace, host_files)?;
    if let Err(why) = goat_command_support(&containment) {
        notes(&format!("the MCP servers are not offered: {why}"));
        return Ok(None);
    }
    let hub = goat_mcp_client::Hub::new(servers, containment)?;
    Ok(Some(Arc::new(hub)))
}

/// Refuses an MCP server's `--read` directories when one holds GOAT's own
/// files (`host_files`: the store, the permission database), by the one
/// rule every contained process's readable directories meet
/// ([`goat_command::reads_host_file`]).
pub fn server_reads(name: &str, read: &[PathBuf], host_files: &[&Path]) -> anyhow::Result<()> {
    if let Some((file, dir)) = goat_command::reads_host_file(read, host_files) {
        anyhow::bail!(
            "the MCP server '{name}' would be able to read {} through --read {}; give a \
             directory that does not hold GOAT's files, or keep them elsewhere (--db)",
            file.display(),
            dir.display()
        );
    }
    Ok(())
}

/// GOAT's own files a contained process must never read, for the store
/// flag `db`: the store and the permission database.
pub fn host_files(db: Option<&Path>) -> anyhow::Result<Vec<PathBuf>> {
    Ok(vec![
        paths::store_path(db)?.into_resolved(),
        paths::permissions_path(None, db)?.into_resolved(),
    ])
}

/// Whether a server can be contained here.
fn goat_command_support(containment: &goat_command::Containment) -> Result<(), String> {
    goat_command::server_support(containment).map_err(|e| e.to_string())
}
