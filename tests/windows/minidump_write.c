/* minidump_write.exe PID OUT.dmp: writes a full-memory minidump of the Windows process PID (as
 * procdump -ma does), for the tests of `scry stacks --minidump`. Built with mingw-w64
 * (x86_64-w64-mingw32-gcc ... -ldbghelp) and run under Wine by
 * tests/e2e/test_windows_minidump.py. A Windows pid under Wine is not the Linux one: the
 * program being dumped prints its own os.getpid(). */
#include <windows.h>
#include <dbghelp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: minidump_write PID OUT.dmp\n");
        return 2;
    }
    DWORD pid = (DWORD)strtoul(argv[1], NULL, 10);
    HANDLE proc = OpenProcess(PROCESS_QUERY_INFORMATION | PROCESS_VM_READ | PROCESS_DUP_HANDLE,
                              FALSE, pid);
    if (!proc) {
        fprintf(stderr, "minidump_write: cannot open process %lu: error %lu\n",
                (unsigned long)pid, (unsigned long)GetLastError());
        return 1;
    }
    HANDLE out = CreateFileA(argv[2], GENERIC_READ | GENERIC_WRITE, 0, NULL, CREATE_ALWAYS,
                             FILE_ATTRIBUTE_NORMAL, NULL);
    if (out == INVALID_HANDLE_VALUE) {
        fprintf(stderr, "minidump_write: cannot create %s: error %lu\n", argv[2],
                (unsigned long)GetLastError());
        CloseHandle(proc);
        return 1;
    }
    MINIDUMP_TYPE type = (MINIDUMP_TYPE)(MiniDumpWithFullMemory | MiniDumpWithThreadInfo |
                                         MiniDumpWithFullMemoryInfo | MiniDumpWithHandleData);
    BOOL ok = MiniDumpWriteDump(proc, pid, out, type, NULL, NULL, NULL);
    DWORD why = GetLastError();
    CloseHandle(out);
    CloseHandle(proc);
    if (!ok) {
        fprintf(stderr, "minidump_write: MiniDumpWriteDump failed: error %lu\n",
                (unsigned long)why);
        return 1;
    }
    return 0;
}
