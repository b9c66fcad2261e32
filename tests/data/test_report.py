"""`data stats`'s disk report: what a built directory costs per token, file by file."""

from __future__ import annotations

from litebert.data import report
from tests.data.builds import small_build


def test_disk_usage_counts_every_recorded_byte_per_token(tmp_path, corpus_and_tokenizer):
    manifest, out = small_build(tmp_path, corpus_and_tokenizer)
    disk = report.stats(out, sample=50)["disk"]
    tokens = manifest["counts"]["tokens"]
    assert disk["tokens.bin"]["bytes"] == (out / "tokens.bin").stat().st_size == 2 * tokens
    assert disk["tokens.bin"]["bytes_per_token"] == 2.0  # uint16 ids: a 200-piece vocabulary
    tokenizer_bytes = sum(p.stat().st_size for p in (out / "tokenizer").rglob("*") if p.is_file())
    assert disk["tokenizer/"]["bytes"] == tokenizer_bytes
    arrays = {name for name in disk if name not in ("tokenizer/", "total")}
    assert arrays == {p.name for p in out.glob("*.bin")}
    assert disk["total"]["bytes"] == tokenizer_bytes + sum(
        (out / name).stat().st_size for name in arrays)
    assert list(disk)[-2:] == ["tokenizer/", "total"]
    sizes = [disk[name]["bytes"] for name in list(disk)[:-2]]
    assert sizes == sorted(sizes, reverse=True)
