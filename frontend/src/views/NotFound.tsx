import { Link } from 'react-router';

export function NotFound() {
  return (
    <div className="panel error-panel">
      <h2>Page not found</h2>
      <p>
        This address does not match a Stallscope page. <Link to="/">Back to the analyses</Link>
      </p>
    </div>
  );
}
