//! The manager layer: what an agent host builds on top of connections —
//! tool naming and routing, results for the model, saved media, and lazy
//! tool loading.

pub mod lazy;
mod mcp_manager;
pub mod media;
pub mod naming;
mod tool_result;

pub use lazy::{
    activate_tools_definition, openai_tool_definition, parse_activate_args, render_mcp_list,
    Grants, ServerListing, ACTIVATE_TOOLS,
};
pub use mcp_manager::{
    GrantScope, ManagerConfig, McpManager, McpServerInfo, RestartPolicy, ServerStatus,
};
pub use media::{
    content_type_for_ext, ext_for_mime, is_media_file_name, MediaStore, MEDIA_URL_PREFIX,
};
pub use naming::{
    is_model_tool_name, mcp_tool_name, parse_mcp_tool_name, TOOL_PREFIX, TOOL_SEPARATOR,
};
pub use tool_result::ToolResult;
