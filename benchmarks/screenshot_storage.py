"""What storing screenshots costs: bytes per screen and write/read time, by storage layout.

The screens are real MiniWoB++ renderings (210 x 160 RGB, the ``miniwob`` package in Debian's
Chromium): resets of several task types with successive seeds, each followed by a few clicks
on random elements, until ``--count`` distinct screens are held (``--synthetic`` draws
page-like images with Pillow instead, for a machine without Chromium). Then, for the same
screens:

1. one screen as raw pixels, zstd-compressed alone, and as PNG at zlib levels 1, 6 (Pillow's
   default) and 9: bytes, encode and decode time;
2. the whole set in each layout, written and read back to arrays, with the bytes on disk per
   screen: the project's screenshot table (raw pixels, ``hindsight.data.screenshots``)
   through Kedro's ``ParquetDataset`` with zstd, as the catalog's ``screenshots`` entry
   writes it, in episode order and in random order; the same with parquet's default
   snappy; a parquet table of PNG files; a folder of PNG files with a CSV index.

Run from the project root (prints its figures; not a test)::

    python benchmarks/screenshot_storage.py                 # 1,000 MiniWoB++ screens
    python benchmarks/screenshot_storage.py --synthetic     # no browser needed
"""

from __future__ import annotations

GROUP = "environments"
REPRODUCES = ("docs/gui_data.md#what-storing-them-costs",)
MEASURED = "about 3 minutes to collect the 1,000 screens in Chromium, on 2 cores of a shared AMD EPYC"
LAST_RUN = "2026-12-06 (the figures' date in docs/gui_data.md)"
"""The index's fields (``benchmarks/README.md``, ``python -m tools.docgen.benchmarks``)."""

import argparse
import hashlib
import os
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import io

import numpy as np
import pandas as pd
import pyarrow

from hindsight.data.screenshots import screen_of_row, screenshot_row, screenshot_table

TASKS = ("click-button", "click-checkboxes", "click-dialog", "click-link", "enter-text", "login-user",
         "click-tab", "email-inbox", "click-option", "focus-text")


def miniwob_screens(count: int, clicks: int, seed: int) -> list[np.ndarray]:
    """``count`` distinct screens from MiniWoB++ (resets plus random element clicks)."""
    import gymnasium
    import miniwob
    from miniwob.action import ActionTypes

    os.environ.setdefault("MINIWOB_CHROME_BINARY", "/usr/bin/chromium")
    os.environ.setdefault("MINIWOB_CHROMEDRIVER", "/usr/bin/chromedriver")
    gymnasium.register_envs(miniwob)
    rng = random.Random(seed)
    screens: dict[str, np.ndarray] = {}

    def keep(observation) -> None:
        image = np.ascontiguousarray(observation["screenshot"])
        screens.setdefault(hashlib.sha1(image.tobytes()).hexdigest(), image)

    per_task = -(-count // len(TASKS))
    for task in TASKS:
        env = gymnasium.make(f"miniwob/{task}-v1")
        try:
            task_seed, start = 0, len(screens)
            while len(screens) - start < per_task and len(screens) < count:
                observation, _ = env.reset(seed=seed + task_seed)
                task_seed += 1
                keep(observation)
                for _ in range(clicks):
                    refs = [int(element["ref"]) for element in observation["dom_elements"] if int(element["ref"]) > 0]
                    action = env.unwrapped.create_action(ActionTypes.CLICK_ELEMENT, ref=rng.choice(refs))
                    observation, _, terminated, truncated, _ = env.step(action)
                    if terminated or truncated:
                        break
                    keep(observation)
        finally:
            env.close()
    return list(screens.values())[:count]


def synthetic_screens(count: int, seed: int) -> list[np.ndarray]:
    """Page-like 210 x 160 screens drawn with Pillow: an instruction bar, text lines, buttons."""
    from PIL import Image, ImageDraw

    rng = random.Random(seed)
    words = "okay cancel submit lorem ipsum dolor sit amet next previous yes no".split()
    screens = []
    for _ in range(count):
        image = Image.new("RGB", (160, 210), "white")
        draw = ImageDraw.Draw(image)
        draw.rectangle((0, 0, 159, 49), fill=(255, 255, 0))
        draw.text((3, 3), " ".join(rng.choices(words, k=4)), fill="black")
        for line in range(rng.randint(2, 6)):
            draw.text((3, 55 + 12 * line), " ".join(rng.choices(words, k=3)), fill="black")
        for _ in range(rng.randint(1, 3)):
            x, y = rng.randint(0, 110), rng.randint(60, 190)
            draw.rectangle((x, y, x + 45, y + 16), fill=(230, 230, 230), outline="black")
            draw.text((x + 4, y + 3), rng.choice(words), fill="black")
        screens.append(np.asarray(image))
    return screens


def encode_png(image: np.ndarray, compress_level: int = 1) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(image).save(buffer, format="PNG", compress_level=compress_level)
    return buffer.getvalue()


def decode_png(data: bytes) -> np.ndarray:
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        return np.asarray(image.convert("RGB"))


def timed(function, repeats: int = 1) -> tuple[float, object]:
    """Best wall time of ``repeats`` calls (seconds) and the last call's result."""
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return best, result


def disk_bytes(path: Path) -> int:
    return sum(item.stat().st_size for item in path.rglob("*") if item.is_file()) if path.is_dir() else path.stat().st_size


def per_screen_codec(screens: list[np.ndarray]) -> None:
    raw = screens[0].nbytes
    print(f"\nOne screen ({screens[0].shape[0]} x {screens[0].shape[1]} RGB), mean over {len(screens)} screens:")
    print(f"  raw pixels      {raw:>8,} bytes")
    encode_s, packed = timed(lambda: [pyarrow.compress(image.tobytes(), codec="zstd", asbytes=True) for image in screens])
    decode_s, _ = timed(lambda: [pyarrow.decompress(data, raw, codec="zstd", asbytes=True) for data in packed])
    sizes = [len(data) for data in packed]
    print(
        f"  raw, zstd alone {statistics.mean(sizes):>8,.0f} bytes (median {statistics.median(sizes):,.0f}; "
        f"{raw / statistics.mean(sizes):.0f}x smaller), encode {1000 * encode_s / len(screens):.2f} ms, "
        f"decode {1000 * decode_s / len(screens):.2f} ms"
    )
    for level in (1, 6, 9):
        encode_s, pngs = timed(lambda: [encode_png(image, compress_level=level) for image in screens])
        decode_s, _ = timed(lambda: [decode_png(data) for data in pngs])
        sizes = [len(data) for data in pngs]
        print(
            f"  PNG level {level}     {statistics.mean(sizes):>8,.0f} bytes (median {statistics.median(sizes):,.0f}; "
            f"{raw / statistics.mean(sizes):.0f}x smaller), encode {1000 * encode_s / len(screens):.2f} ms, "
            f"decode {1000 * decode_s / len(screens):.2f} ms"
        )


def layouts(screens: list[np.ndarray], workdir: Path) -> None:
    from kedro_datasets.pandas import ParquetDataset

    count = len(screens)
    keys = [(f"episode-{index // 5}", index % 5) for index in range(count)]
    results = []

    def save_raw(path: Path, order: list[int], compression: str | None):
        dataset = ParquetDataset(filepath=str(path), save_args={"compression": compression} if compression else None)

        def write():
            dataset.save(screenshot_table(screenshot_row(*keys[i], screens[i]) for i in order))

        def read():
            table = dataset.load()
            images = [screen_of_row(*row) for row in zip(table["pixels"], table["width"], table["height"])]
            back = [None] * count
            for position, index in enumerate(order):
                back[index] = images[position]
            return back

        return write, read

    in_order = list(range(count))
    shuffled = list(range(count))
    random.Random(0).shuffle(shuffled)
    for name, order, compression in (
        ("screenshot table, zstd (the catalog's)", in_order, "zstd"),
        ("  the same, rows in random order", shuffled, "zstd"),
        ("screenshot table, snappy (the default)", in_order, None),
    ):
        path = workdir / f"screens_{len(results)}.parquet"
        results.append((name, *save_raw(path, order, compression), path))

    png_table_path = workdir / "png_table.parquet"
    png_dataset = ParquetDataset(filepath=str(png_table_path))

    def write_png_table():
        png_dataset.save(pd.DataFrame({"episode_id": [k[0] for k in keys], "step": [k[1] for k in keys],
                                       "png": [encode_png(image) for image in screens]}))

    def read_png_table():
        return [decode_png(data) for data in png_dataset.load()["png"]]

    results.append(("parquet table of PNG files (level 1)", write_png_table, read_png_table, png_table_path))

    folder = workdir / "png_folder"

    def write_folder():
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        index = []
        for (episode, step), image in zip(keys, screens):
            name = f"{episode}_{step}.png"
            (folder / name).write_bytes(encode_png(image))
            index.append({"episode_id": episode, "step": step, "file": name})
        pd.DataFrame(index).to_csv(folder / "index.csv", index=False)

    def read_folder():
        index = pd.read_csv(folder / "index.csv")
        return [decode_png((folder / name).read_bytes()) for name in index["file"]]

    results.append(("folder of PNG files + CSV index", write_folder, read_folder, folder))

    print(f"\n{count:,} screens, written (encode + save) and read back (load + decode) to arrays, best of 3:")
    print(f"  {'layout':<38} {'bytes/screen':>12} {'write s':>8} {'read s':>8}")
    for name, write, read, path in results:
        write_s, _ = timed(write, repeats=3)
        read_s, images = timed(read, repeats=3)
        assert all(np.array_equal(a, b) for a, b in zip(images, screens)), name  # lossless round trip
        print(f"  {name:<38} {disk_bytes(path) / count:>12,.0f} {write_s:>8.2f} {read_s:>8.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=1000, help="distinct screens to store")
    parser.add_argument("--clicks", type=int, default=3, help="random clicks after each reset")
    parser.add_argument("--synthetic", action="store_true", help="Pillow-drawn pages instead of MiniWoB++")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache", type=Path, help="an .npy file keeping the collected screens for the next run")
    args = parser.parse_args()
    start = time.perf_counter()
    if args.cache is not None and args.cache.is_file():
        screens = list(np.load(args.cache))[: args.count]
    else:
        screens = synthetic_screens(args.count, args.seed) if args.synthetic else miniwob_screens(args.count, args.clicks, args.seed)
        if args.cache is not None:
            np.save(args.cache, np.stack(screens))
    source = "synthetic" if args.synthetic else "MiniWoB++"
    print(f"{len(screens):,} distinct {source} screens collected in {time.perf_counter() - start:.0f} s")
    per_screen_codec(screens)
    with tempfile.TemporaryDirectory() as workdir:
        layouts(screens, Path(workdir))


if __name__ == "__main__":
    main()
