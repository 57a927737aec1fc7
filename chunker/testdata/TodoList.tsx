import React, { useCallback, useMemo, useState } from "react";

export interface Todo {
  id: number;
  title: string;
  done: boolean;
}

type Filter = "all" | "active" | "done";

/** Renders one todo with a checkbox. */
function TodoItem({ todo, onToggle }: { todo: Todo; onToggle: (id: number) => void }) {
  return (
    <li className={todo.done ? "done" : ""}>
      <label>
        <input type="checkbox" checked={todo.done} onChange={() => onToggle(todo.id)} />
        {todo.title}
      </label>
    </li>
  );
}

/**
 * A filterable todo list with an input to add items.
 */
export const TodoList: React.FC<{ initial?: Todo[] }> = ({ initial = [] }) => {
  const [todos, setTodos] = useState<Todo[]>(initial);
  const [filter, setFilter] = useState<Filter>("all");
  const [draft, setDraft] = useState("");

  const toggle = useCallback((id: number) => {
    setTodos((ts) => ts.map((t) => (t.id === id ? { ...t, done: !t.done } : t)));
  }, []);

  const visible = useMemo(
    () => todos.filter((t) => filter === "all" || (filter === "done") === t.done),
    [todos, filter],
  );

  function add() {
    if (!draft.trim()) return;
    setTodos((ts) => [...ts, { id: Date.now(), title: draft.trim(), done: false }]);
    setDraft("");
  }

  return (
    <div>
      <input value={draft} onChange={(e) => setDraft(e.target.value)} />
      <button onClick={add}>Add</button>
      <select value={filter} onChange={(e) => setFilter(e.target.value as Filter)}>
        <option value="all">All</option>
        <option value="active">Active</option>
        <option value="done">Done</option>
      </select>
      <ul>
        {visible.map((t) => (
          <TodoItem key={t.id} todo={t} onToggle={toggle} />
        ))}
      </ul>
    </div>
  );
};

export default TodoList;
