// Array folding in the Jobs view, the rule of `fedq jobs` (federation/cli/folding.py, its home): the
// queued elements of one array that wait in the same state for the same reason are one row,
// `<array>-[2-7,9]`, where the first of them would be; running and finished elements keep a row each.
// tests/ui/test_dashboard.py checks this mirror folds as the CLI's rule does. A folded row also carries
// its `members`, for the view's expand control.
export const QUEUED = ["Pending", "Reserved", "Unschedulable"];

function group(item) {
  const array = item.array_id;
  const index = item.array_index;
  if (!array || index === null || index === undefined || !QUEUED.includes(item.state)) return null;
  return JSON.stringify([array, item.state, item.wait?.code ?? ""]);
}

// [2, 3, 4, 7, 9, 10] as "2-4,7,9-10".
function ranges(indexes) {
  const parts = [];
  let start = indexes[0];
  let previous = start;
  for (const index of [...indexes.slice(1), null]) {
    if (index !== null && index === previous + 1) {
      previous = index;
      continue;
    }
    parts.push(start === previous ? String(start) : `${start}-${previous}`);
    if (index !== null) start = previous = index;
  }
  return parts.join(",");
}

export function foldArrays(items) {
  const groups = new Map();
  for (const item of items) {
    const key = group(item);
    if (key === null) continue;
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(item);
  }
  const out = [];
  for (const item of items) {
    const key = group(item);
    const members = key === null ? [item] : groups.get(key);
    if (members.length === 1) out.push(item);
    else if (members[0] === item) {
      const indexes = members.map((m) => m.array_index).sort((a, b) => a - b);
      out.push({ ...item, id: `${item.array_id}-[${ranges(indexes)}]`, elements: members.length, members });
    }
  }
  return out;
}
