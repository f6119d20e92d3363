"""What the API reads, a module per resource (requests, stalls, timeline, heatmaps, offcpu, analyses); every read goes
through run.run (bound parameters, a time limit, a row cap). Answers that depend only on an analysis' rows are kept
in the AnalysisCache each query is given (backend/cache/); heatindex.py and flame.py are the in-memory structures
heatmaps and flame graphs are read from; first_views.py what is precomputed once an ingest committed."""
