/* Which files `scry mcp`'s tools may read and write: only regular files under the server's roots
 * (its working directory, each `--root DIR`, and the directory its own tools write into), each
 * path resolved first (realpath: no symlink, no `..` left) and compared component by component
 * with the resolved roots. A client's path arguments come from an agent that a file or a web page
 * may have prompt-injected; without this rule the tools would read (and quote) any file the
 * server can (docs/SECURITY.md, "MCP path arguments"). */
#ifndef SCRY_MCP_MCP_PATHS_H
#define SCRY_MCP_MCP_PATHS_H

#include <stdbool.h>
#include <stddef.h>

#define MCP_MAX_ROOTS 64

/* Adds a root: dir resolved, which must be a directory. Returns 0 or a recorded error (usage
 * for a path that is no directory, too many roots). */
int mcp_roots_add(const char *dir);
/* Forgets every root (tests, the server's end). */
void mcp_roots_clear(void);
/* True if the resolved (absolute, symlink-free) path is a root or lies under one. */
bool mcp_under_root(const char *resolved);

/* A file a tool reads: given resolved into out (size bytes), which must be a regular file under
 * a root. what names the argument in messages ("profile", "snapshot"). Returns 0, or a recorded
 * io_error (does not exist, not a regular file) or permission_denied (outside the roots); the
 * messages name the path and what was expected, never the file's content. */
int mcp_path_read(const char *given, const char *what, char *out, size_t size);
/* A directory a tool runs in (run_profile's cwd): as mcp_path_read, for a directory. */
int mcp_path_dir(const char *given, const char *what, char *out, size_t size);
/* A file a tool creates: its directory must resolve under a root, and the file must not exist
 * (no file is ever overwritten, no symlink followed). out gets the resolved directory and the
 * name. */
int mcp_path_new(const char *given, const char *what, char *out, size_t size);

#endif
