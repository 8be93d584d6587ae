"""Makes this directory's source images and, under expect/, what Pillow makes of them.

Run with Pillow 12 and NumPy (AIPerf 0.13's own environment has both):
    python tests/data/image-source/make.py
The sources are small on purpose; ringperf's tests compare its decode and resize with the
files under expect/, which Pillow wrote: `Image.open(src).resize((w, h))` as AIPerf's image
generator calls it, and the plain decode of the JPEG.
"""
from pathlib import Path

import numpy as np
from PIL import Image

here = Path(__file__).resolve().parent
rng = np.random.default_rng(7)


def smooth(h, w, c):
    y, x = np.mgrid[0:h, 0:w]
    base = [(x * 255 // max(w - 1, 1)), (y * 255 // max(h - 1, 1)), ((x + y) * 7) % 256, (x * y) % 256]
    img = np.stack(base[:c], axis=-1).astype(np.int32)
    img += rng.integers(-20, 21, img.shape)
    return np.clip(img, 0, 255).astype(np.uint8)


rgb = smooth(23, 37, 3)
Image.fromarray(rgb, "RGB").save(here / "a_rgb.png")
rgba = smooth(31, 29, 4)
rgba[0, :, 3] = 0  # fully transparent row
rgba[1, :, 3] = 255  # opaque row
Image.fromarray(rgba, "RGBA").save(here / "b_rgba.png")
gray = smooth(27, 19, 1)[:, :, 0]
Image.fromarray(gray, "L").save(here / "c_gray.png")
Image.fromarray(smooth(33, 41, 3), "RGB").save(here / "d_photo.jpg", quality=90)
(here / "e_broken.png").write_bytes(b"this is not an image at all\n")
full = (here / "a_rgb.png").read_bytes()
(here / "f_truncated.png").write_bytes(full[: len(full) // 2])
(here / "notes.txt").write_text("not indexed: Pillow registers no .txt\n")
Image.fromarray(rgb, "RGB").save(here / ".hidden.png")

for name in ["a_rgb.png", "b_rgba.png", "c_gray.png", "d_photo.jpg"]:
    with Image.open(here / name) as im:
        if name.endswith(".jpg"):
            im.save(here / "expect" / "d_photo_decoded.png")
        for size in [(15, 10), (50, 40)]:
            im.resize(size).save(here / "expect" / f"{Path(name).stem}_{size[0]}x{size[1]}.png")

gif_dir = here.parent / "image-source-gif"
gif_dir.mkdir(exist_ok=True)
Image.fromarray(rgb, "RGB").save(gif_dir / "a.png")
Image.fromarray(rgb, "RGB").save(gif_dir / "b.gif")
