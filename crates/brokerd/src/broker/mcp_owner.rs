//! The owner's MCP requests on the admin side: the servers and their pins (`mcp_query`),
//! a server's tools listed in a unit of its own with no network (`mcp_probe`; a remote
//! server's unit reaches its URL's host alone), and the pin
//! of what the owner was shown (`mcp_pin`), audited. The probe runs no tool of the server
//! and its answer goes to the owner only, shown inert by `bxctl mcp pin`.

use std::sync::atomic::{AtomicU64, Ordering};

use proto::mcp::{McpListing, McpPin, McpPinned, McpProbed, McpQuery};
use proto::{AuditEvent, AuditLine};

use super::Broker;
use crate::Fatal;
use crate::pins::owner::PinRefused;
use daemon::lock;

/// A number for each probe's unit name, so two probes of one server never share a unit.
static PROBES: AtomicU64 = AtomicU64::new(1);

impl Broker {
    pub(crate) fn mcp_listing(&self, q: &McpQuery) -> McpListing {
        self.pins.listing(q.server.as_deref())
    }

    /// Lists the server's tools in a unit (`boxmaker-tool mcp-pin`), and holds what can be
    /// pinned. `Err`: no such server, or no unit could be made for it.
    pub(crate) fn mcp_probe(&self, server: &str) -> Result<McpProbed, String> {
        let config = self
            .pins
            .server(server)
            .ok_or_else(|| PinRefused::Unknown(server.to_owned()).to_string())?;
        let nonce = PROBES.fetch_add(1, Ordering::Relaxed);
        let spec =
            crate::run::mcp::probe(&self.config, config, nonce).map_err(|e| e.to_string())?;
        let output = self.runner.probe(&spec);
        Ok(self.pins.probed(server, output))
    }

    /// Pins what the owner was shown, audited before it is answered. `Ok(Err)`: refused.
    pub(crate) fn mcp_pin(
        &self,
        pin: &McpPin,
        by: &str,
    ) -> Result<Result<McpPinned, PinRefused>, Fatal> {
        let (written, path) = match self.pins.pin(&pin.server, pin.hash) {
            Ok(done) => done,
            Err(refused) => return Ok(Err(refused)),
        };
        let tools = written
            .tools
            .iter()
            .filter_map(|t| mcp::names::offered(&written.server, &t.name).ok())
            .collect();
        lock(&self.audit).append(|seq, time, prev| {
            AuditLine::Event(AuditEvent::McpPinned {
                seq,
                time,
                prev,
                by: by.to_owned(),
                server: written.server.clone(),
                hash: written.hash,
                tools,
            })
        })?;
        Ok(Ok(McpPinned {
            server: written.server,
            hash: written.hash,
            pin_file: path.display().to_string(),
        }))
    }
}
