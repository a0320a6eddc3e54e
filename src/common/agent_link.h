/* The record by which an agent loaded by `scry record --pid PID --memory` says where its part
 * directory is (docs/agent-protocol.md, "The attach link"). A process that scry did not start has
 * no SCRY_PART_DIR in its environment; `scry dump --pid` finds this record instead, at the
 * dynamic symbol scry_agent_link of the libscry-agent.so mapped in the process, and reads it
 * with process_vm_readv. The agent (src/agent/attach.c) fills it once attached and empties it
 * when the detach begins; `seq` is odd while it is being changed (read it before and after the
 * rest: a record is taken only when both are the same even number). */
#ifndef SCRY_COMMON_AGENT_LINK_H
#define SCRY_COMMON_AGENT_LINK_H

#include <stdint.h>

#define AGENT_LINK_SYMBOL "scry_agent_link"
#define AGENT_LINK_MAGIC "SCRYLNK" /* 8 bytes with its NUL */
#define AGENT_LINK_VERSION 1u
#define AGENT_LINK_DIR_MAX 4096

struct agent_link {
    char magic[8];
    uint32_t version;
    uint32_t attached; /* 1: an attached, profiling agent answers in part_dir */
    uint64_t seq;
    int32_t pid; /* the process the agent attached in (a forked child has its parent's copy) */
    uint32_t reserved;
    char part_dir[AGENT_LINK_DIR_MAX]; /* NUL-terminated */
};

#endif
