"""docchat: chat over your PDFs, on AWS or on a laptop."""

# The release: the package's (pyproject.toml), the API's and the MCP server's.
VERSION = "0.1.0"
