import { Link, Outlet } from 'react-router';

export function Layout() {
  return (
    <div className="app">
      <header className="topbar">
        <Link to="/" className="brand">
          <svg width="18" height="18" viewBox="0 0 16 16" aria-hidden="true">
            <rect x="1" y="9" width="3" height="6" fill="#58a6ff" />
            <rect x="6" y="5" width="3" height="10" fill="#58a6ff" />
            <rect x="11" y="1" width="3" height="14" fill="#ff8a5b" />
          </svg>
          Stallscope
        </Link>
        <span className="tagline">Linux latency stalls, explained from kernel traces</span>
      </header>
      <main className="content">
        <Outlet />
      </main>
    </div>
  );
}
