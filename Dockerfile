# The same steps as `make run`: npm ci and the frontend build, trace-cmd (and its libraries) and perf from apt, an
# editable install of the Python package (which compiles the C tokenizers and the trace.dat decoder), then
# `stallscope serve --demo`.
FROM node:20-bookworm-slim AS web
WORKDIR /app
COPY package.json package-lock.json ./
COPY frontend/package.json frontend/
COPY e2e/package.json e2e/
RUN npm ci --no-audit --no-fund
COPY frontend frontend
RUN npm run build

FROM python:3.11-slim-bookworm
# trace-cmd's libraries and perf: trace.dat uploads are decoded by libtracecmd (parsers/tracedat-records, built by
# setup.py; `trace-cmd report` when it cannot), perf.data uploads by `perf script` (parsers/perfdata.py)
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev pkg-config trace-cmd libtracecmd-dev \
    libtracefs-dev libtraceevent-dev linux-perf \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml setup.py README.md ./
COPY parsers parsers
COPY backend backend
COPY samples samples
RUN pip install --no-cache-dir -e .
COPY --from=web /app/frontend/dist frontend/dist
ENV STALLSCOPE_DB=/data/stallscope.duckdb STALLSCOPE_HOST=0.0.0.0 STALLSCOPE_PORT=8000
EXPOSE 8000
VOLUME /data
CMD ["stallscope", "serve", "--demo"]
