import { type QueryKey, useMutation, useQueryClient } from "@tanstack/react-query";
import type { ReactNode } from "react";
import { DeleteButton } from "./form.tsx";
import { problemOf } from "./problem.ts";

export interface Column<Row> {
  header: string;
  cell: (row: Row) => ReactNode;
}

/** A change to a listed resource: once it is made, the list is asked for again. */
export function useListChange<Input, Answer>(
  list: { queryKey: QueryKey },
  change: (input: Input) => Promise<Answer>,
  onDone?: (answer: Answer, input: Input) => void,
) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: change,
    onSuccess: async (answer, input) => {
      onDone?.(answer, input);
      await queryClient.invalidateQueries({ queryKey: list.queryKey });
    },
  });
}

/** Rows as a table: a header per column, and a last column of actions (named for screen readers) when there are any. */
export function RowsTable<Row>(props: {
  rows: Row[];
  columns: Column<Row>[];
  rowKey: (row: Row) => string;
  actions?: (row: Row) => ReactNode;
}) {
  return (
    <table>
      <thead>
        <tr>
          {props.columns.map((column) => (
            <th key={column.header} scope="col">
              {column.header}
            </th>
          ))}
          {props.actions && (
            <th scope="col">
              <span className="visually-hidden">Actions</span>
            </th>
          )}
        </tr>
      </thead>
      <tbody>
        {props.rows.map((row) => (
          <tr key={props.rowKey(row)}>
            {props.columns.map((column) => (
              <td key={column.header}>{column.cell(row)}</td>
            ))}
            {props.actions && <td>{props.actions(row)}</td>}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** How a row is deleted: what the button names (`secret stripe-key`), its verb, and the call. */
export interface RowRemoval<Row> {
  what: (row: Row) => string;
  verb?: (row: Row) => string;
  /** Rows that cannot be deleted (an account's owner) get no button. */
  removable?: (row: Row) => boolean;
  run: (row: Row) => Promise<unknown>;
}

/**
 * A page of one resource: its heading, what the page puts first (a form that adds to the
 * list, what was just made), then the rows as a table, each with a delete button, or `empty`
 * when there are none. The rows come from the route's loader (`list`); a deletion asks for
 * them again, and its failure is said above the table.
 */
export function ListPage<Row>(props: {
  title: string;
  list: { queryKey: QueryKey };
  rows: Row[];
  columns: Column<Row>[];
  rowKey: (row: Row) => string;
  remove?: RowRemoval<Row>;
  empty: string;
  children?: ReactNode;
}) {
  const { remove } = props;
  const removal = useListChange(props.list, (row: Row) => remove?.run(row) ?? Promise.resolve());
  return (
    <section>
      <h1>{props.title}</h1>
      {props.children}
      {removal.error && <div role="alert">{problemOf(removal.error).message}</div>}
      {props.rows.length === 0 ? (
        <p>{props.empty}</p>
      ) : (
        <RowsTable<Row>
          rows={props.rows}
          columns={props.columns}
          rowKey={props.rowKey}
          actions={
            remove &&
            ((row) =>
              (remove.removable?.(row) ?? true) && (
                <DeleteButton what={remove.what(row)} verb={remove.verb?.(row)} onClick={() => removal.mutate(row)} />
              ))
          }
        />
      )}
    </section>
  );
}
