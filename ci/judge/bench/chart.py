"""bench.png: bytes per sample and overhead per mode and K."""
from .model import MODES


def plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = []
    for row in rows:
        key = (row["workload"], row["events"])
        if key not in panels:
            panels.append(key)
    fig, axes = plt.subplots(2, len(panels), figsize=(3.2 * len(panels), 6),
                             squeeze=False)
    colors = {"none": "tab:gray", "inplace": "tab:red",
              "deferred": "tab:blue"}
    for col, key in enumerate(panels):
        mine = [r for r in rows if (r["workload"], r["events"]) == key]
        ks = [r["k"] for r in mine]
        for mode in MODES:
            for ax, field in ((axes[0][col], "bytes"),
                              (axes[1][col], "overhead")):
                ys = [r[mode].get(field) if r[mode]["status"] == "ok"
                      else None for r in mine]
                pts = [(k, y) for k, y in zip(ks, ys) if y is not None]
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-",
                            color=colors[mode], label=mode)
        floors = [(r["k"], r["deferred"]["floor"]) for r in mine
                  if "floor" in r["deferred"]]
        if floors:
            axes[0][col].plot([p[0] for p in floors],
                              [p[1] for p in floors], "--", color="tab:blue",
                              alpha=0.5, label="deferred floor")
        ev = "per-CPU" if key[1] == "cpu" else "per-task"
        axes[0][col].set_title(f"{key[0]} (depth {mine[0]['depth']}, {ev})",
                               fontsize=9)
        axes[1][col].set_xlabel("K sampling events")
        for ax in axes[:, col]:
            ax.set_xscale("log", base=2)
            ax.set_xticks(ks)
            ax.set_xticklabels([str(k) for k in ks])
            ax.grid(alpha=0.3)
        axes[0][col].set_ylim(bottom=0)
    axes[0][0].set_ylabel("ring-buffer bytes per sample")
    axes[1][0].set_ylabel("wall time / none (TCG: noisy)")
    axes[0][0].legend(fontsize=7)
    fig.suptitle("make bench: deferred vs in-place user callchains",
                 fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
