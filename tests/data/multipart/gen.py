"""Writes the aiohttp multipart bodies ringperf's writer is checked against (see README.md)."""
import asyncio
import aiohttp

BOUNDARY = "0123456789abcdef0123456789abcdef"

CASES = {
    "image_edit.bin": [
        ("prompt", "make it blue", None, None),
        ("model", "mock-model", None, None),
        ("response_format", "b64_json", None, None),
        ("n", "1", None, None),
        ("image", b"\x89PNG\r\n\x1a\n--0123\r\n\x00\xff", "image.png", "image/png"),
    ],
    "audio_transcription.bin": [
        ("file", b"RIFF\x24\x00\x00\x00WAVEfmt ", "audio.wav", "audio/wav"),
        ("model", "whisper", None, None),
        ("temperature", "0.2", None, None),
    ],
    "quoting.bin": [
        ('a b"c\\d', "v", None, None),
        ("naive", "\u00e9t\u00e9", None, None),
        ("f", b"x", "my file \u00e9.png", "image/png"),
        ("empty", "", None, None),
    ],
}


async def body(parts):
    form = aiohttp.FormData(default_to_multipart=True)
    for name, value, filename, ctype in parts:
        if filename is None:
            form.add_field(name, value)
        else:
            form.add_field(name, value, filename=filename, content_type=ctype)
    writer = form()
    chunks = bytearray()

    class Sink:
        async def write(self, data):
            chunks.extend(data)

    await writer.write(Sink())
    return bytes(chunks).replace(writer.boundary.encode(), BOUNDARY.encode())


for name, parts in CASES.items():
    with open(name, "wb") as f:
        f.write(asyncio.run(body(parts)))
