"""zarr v3 codecs on strided's kernels (optional extra ``strided[zarr]``): being written."""
