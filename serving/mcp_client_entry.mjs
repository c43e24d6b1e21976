// What the page's MCP client (worker/mcp_client.js) takes from the official MCP client SDK
// (@modelcontextprotocol/client): serve.py bundles this into one ES module,
// web/vendor/mcp-client-<version>/mcp_client.mjs (module workers cannot use import maps).
export {Client, StreamableHTTPClientTransport, SdkHttpError, UnauthorizedError, ProtocolError,
        SdkError, LATEST_PROTOCOL_VERSION} from '@modelcontextprotocol/client';
