"""strided on dask arrays (optional extra ``strided[dask]``): being written."""
