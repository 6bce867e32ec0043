// A GitHub API double for real `gh` (GraphQL by operation name, the REST paths gh uses here): enough for `gh repo
// view`, `gh pr create` and `gh pr list --json`, with the pull requests it was asked to make kept in memory.
export interface FakePr {
  number: number;
  title: string;
  body: string;
  headRefName: string;
  baseRefName: string;
  url: string;
  state: "OPEN";
  isDraft: boolean;
  author: { login: string };
}

export interface FakeGitHub {
  /** The handler for /api/… (startGitHttpServer's `api`). */
  handle(req: Request, url: URL): Promise<Response>;
  prs: FakePr[];
  /** Every API request: its path, GraphQL operation and Authorization header. */
  requests: { path: string; op: string; authorization: string | null }[];
}

export function fakeGitHub(token: string): FakeGitHub {
  const prs: FakePr[] = [];
  const requests: FakeGitHub["requests"] = [];
  const repo = (owner: string, name: string) => ({
    id: `R_${owner}_${name}`,
    name,
    owner: { login: owner },
    nameWithOwner: `${owner}/${name}`,
    description: `${name}, a test double`,
    hasIssuesEnabled: true,
    hasWikiEnabled: false,
    viewerPermission: "WRITE",
    defaultBranchRef: { name: "main" },
    parent: null,
    isPrivate: true,
    url: `https://example.invalid/${owner}/${name}`,
  });
  return {
    prs,
    requests,
    async handle(req, url) {
      const body = req.method === "POST" ? await req.text() : "";
      const op = /(?:query|mutation) (\w+)/.exec(body)?.[1] ?? "";
      const authorization = req.headers.get("authorization");
      requests.push({ path: url.pathname, op, authorization });
      if (authorization !== `token ${token}`) return Response.json({ message: "Bad credentials" }, { status: 401 });
      if (url.pathname !== "/api/graphql") return Response.json({ message: "Not Found" }, { status: 404 });
      const v = (JSON.parse(body) as { variables?: Record<string, unknown> }).variables ?? {};
      switch (op) {
        case "RepositoryInfo":
          return Response.json({ data: { repository: repo(String(v.owner), String(v.name)) } });
        case "PullRequestForBranch":
          return Response.json({ data: { repository: { pullRequests: { nodes: prs.filter((p) => p.headRefName === v.headRefName) } } } });
        case "PullRequestCreate": {
          const input = v.input as { title: string; body: string; headRefName: string; baseRefName: string; draft: boolean };
          const pr: FakePr = { number: 100 + prs.length, title: input.title, body: input.body, headRefName: input.headRefName, baseRefName: input.baseRefName, url: `https://example.invalid/pull/${100 + prs.length}`, state: "OPEN", isDraft: input.draft, author: { login: "agent" } };
          prs.push(pr);
          return Response.json({ data: { createPullRequest: { pullRequest: { id: `PR_${pr.number}`, number: pr.number, url: pr.url } } } });
        }
        case "PullRequestList":
          return Response.json({ data: { repository: { pullRequests: { totalCount: prs.length, nodes: prs, pageInfo: { hasNextPage: false, endCursor: null } } } } });
        default:
          return Response.json({ errors: [{ message: `the test double does not answer ${op || "this query"}` }] });
      }
    },
  };
}
