"""Executes notebook cells in a real Jupyter kernel, for tests/e2e/test_jupyter.py (run with the
Python that has nbclient, nbformat and ipykernel: build/jupyter-venv).

    run_notebook.py KERNEL_NAME CELLS.json OUT.json CWD
    run_notebook.py --interrupt SECONDS KERNEL_NAME CELLS.json OUT.json CWD

CELLS.json: a list of code cells' sources. The notebook is built with nbformat, executed in a
kernel of that name (found on JUPYTER_PATH) in the folder CWD with errors allowed, and OUT.json
gets, per cell, its outputs as nbformat writes them (stream text, display data by MIME type,
errors' ename and evalue). The executed notebook itself goes next to OUT.json (OUT.ipynb).

With --interrupt, the cells run one by one through jupyter_client as a front end sends them, and
the kernel is interrupted (Jupyter's interrupt: SIGINT to the kernel's process group) SECONDS
after the second-to-last cell starts; OUT.json gets the same per-cell outputs."""

import json
import queue
import sys
import time

TIMEOUT_S = 120  # per cell


def run_notebook(kernel, sources, out_path, cwd):
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    NotebookClient(nb, kernel_name=kernel, timeout=TIMEOUT_S, allow_errors=True,
                   resources={"metadata": {"path": cwd}}).execute()
    nbformat.write(nb, out_path.rsplit(".", 1)[0] + ".ipynb")
    return [cell.outputs for cell in nb.cells]


def _outputs_until_idle(kc, msg_id):
    outs = []
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            msg = kc.get_iopub_msg(timeout=1)
        except queue.Empty:
            continue
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind, content = msg["msg_type"], msg["content"]
        if kind == "status" and content["execution_state"] == "idle":
            return outs
        if kind == "stream":
            outs.append({"output_type": "stream", "name": content["name"],
                         "text": content["text"]})
        elif kind in ("execute_result", "display_data"):
            outs.append({"output_type": kind, "data": content["data"]})
        elif kind == "error":
            outs.append({"output_type": "error", "ename": content["ename"],
                         "evalue": content["evalue"]})
    raise TimeoutError(f"no end of the cell in {TIMEOUT_S} s")


def run_with_interrupt(seconds, kernel, sources, cwd):
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name=kernel, cwd=cwd)
    try:
        results = []
        for i, source in enumerate(sources):
            msg_id = kc.execute(source)
            if i == len(sources) - 2:
                time.sleep(seconds)
                km.interrupt_kernel()
            results.append(_outputs_until_idle(kc, msg_id))
        return results
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)


def main():
    args = sys.argv[1:]
    interrupt = None
    if args[0] == "--interrupt":
        interrupt, args = float(args[1]), args[2:]
    kernel, cells_path, out_path, cwd = args[:4]
    with open(cells_path, encoding="utf-8") as f:
        sources = json.load(f)
    if interrupt is None:
        outputs = run_notebook(kernel, sources, out_path, cwd)
    else:
        outputs = run_with_interrupt(interrupt, kernel, sources, cwd)
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(outputs, f)


if __name__ == "__main__":
    main()
