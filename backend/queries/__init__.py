"""What the API reads, a module per resource (requests, stalls, timeline, heatmaps, offcpu, analyses); every read goes
through run.run (bound parameters, a time limit, a row cap). memo.py keeps results that depend only on an
analysis' rows; heatindex.py and flame.py are the in-memory structures heatmaps and flame graphs are read from."""
